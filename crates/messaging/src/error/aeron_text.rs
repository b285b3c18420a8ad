//! Aeron's error text in one line. The C driver and client write an error as `(code) words`,
//! then one `[function, file:line] what` frame per function it passed through, the first
//! where it was set; the driver sends that text with an error response and keeps it in its
//! error log, and the embedded driver's calls leave it in `aeron_errmsg()`.

/// `text` as one line: each frame's `what` in order (empty ones and repeats of the first line
/// left out), then `(code's words, in function)` of the first frame that says something;
/// `None` when `text` holds nothing. Text in another shape has its lines joined with "; ".
pub(crate) fn one_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let (first, rest) = lines.split_first()?;
    let frames: Vec<(&str, &str)> = rest.iter().filter_map(|l| frame(l)).collect();
    if frames.is_empty() || frames.len() < rest.len() {
        return Some(lines.join("; "));
    }
    let said: Vec<(&str, &str)> = frames
        .into_iter()
        .filter(|(_, what)| !what.is_empty() && what != first)
        .collect();
    let code = first
        .strip_prefix('(')
        .and_then(|l| l.split_once(") "))
        .map_or(*first, |(_, words)| words);
    Some(match said.first() {
        Some((function, _)) => {
            let whats: Vec<&str> = said.iter().map(|(_, what)| *what).collect();
            format!("{} ({code}, in {function})", whats.join("; "))
        }
        None => (*first).to_owned(),
    })
}

/// A frame line, `[function, file:line] what`, as (function, what).
fn frame(line: &str) -> Option<(&str, &str)> {
    let (place, what) = line.strip_prefix('[')?.split_once(']')?;
    let function = place.split(", ").next().unwrap_or(place);
    Some((function, what.trim()))
}

#[cfg(test)]
mod tests {
    use super::one_line;

    /// What the C driver said when an embedded driver was given an MTU of 7.
    #[test]
    fn a_refused_setting_reads_as_what_code_and_where() {
        let text = "(22) Invalid argument\n[aeron_driver_context_validate_mtu_length, aeron_driver_context.c:1623] \
                    mtuLength must be a > HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGTH: mtuLength=7\n";
        assert_eq!(
            one_line(text).as_deref(),
            Some(
                "mtuLength must be a > HEADER_LENGTH and <= MAX_UDP_PAYLOAD_LENGTH: mtuLength=7 \
                 (Invalid argument, in aeron_driver_context_validate_mtu_length)"
            )
        );
    }

    /// What the driver answered to a publication on an endpoint that does not resolve: the
    /// frames in order, the empty ones and the repeat of the first line left out.
    #[test]
    fn a_rejected_channel_keeps_every_frame_s_words_in_order() {
        let text = "(-9) unknown host\n\
            [aeron_driver_conductor_set_error_from_result, aeron_driver_conductor.c:2914] (-9) unknown host\n\
            [aeron_ip_addr_resolver, aeron_netutil.c:75] Unable to resolve host=(256.1.1.1): (-2) Name or service not known\n\
            [aeron_udp_channel_finish_parse, aeron_udp_channel.c:361] URI: aeron:udp?endpoint=256.1.1.1:40123\n\
            \n\
            [aeron_driver_conductor_execute_add_network_publication_parse_channel, aeron_driver_conductor.c:4224] \n";
        assert_eq!(
            one_line(text).as_deref(),
            Some(
                "Unable to resolve host=(256.1.1.1): (-2) Name or service not known; URI: \
                 aeron:udp?endpoint=256.1.1.1:40123 (unknown host, in aeron_ip_addr_resolver)"
            )
        );
    }

    #[test]
    fn other_text_is_joined_and_nothing_is_none() {
        assert_eq!(one_line(" \n").as_deref(), None);
        assert_eq!(
            one_line("(22) Invalid argument").as_deref(),
            Some("(22) Invalid argument")
        );
        assert_eq!(
            one_line("something odd\nand more").as_deref(),
            Some("something odd; and more")
        );
    }
}
