//! `latency-probe ab` as a user runs it, against known truths: two identical arms (A/A) give
//! no change at p50 and p99; a planted slowdown of B (`--plant-delay-ns`, 20 µs on a path of
//! about 1-2 µs) is found worse at p50, with the right sign. The two experiments run one after
//! the other in one test (each runs two hot threads). The A/A runs at 99.9% confidence, and a
//! false alarm there (about once in 500 runs over its two percentiles: CI met one) earns one
//! more A/A on a fresh order seed; the test fails when that one finds a change too, which a
//! fair `ab` does about once in 250,000 runs and a biased one (an arm favoured) nearly always.

mod common;

use common::{read_json, run, stderr, tmp_json};

/// `latency-probe ab` with `extra` flags and the common probe flags after `--`: its output
/// and its JSON.
fn ab(tag: &str, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let json = tmp_json(tag);
    let mut args = vec!["ab", "--duration", "0.3", "--json", json.to_str().unwrap()];
    args.extend(extra);
    args.extend([
        "--",
        "--rate",
        "10000",
        "--msg-size",
        "64",
        "--idle",
        "yield",
        "--term-length",
        "65536",
        "--floor",
        "0.1",
        "--warmup",
        "1000",
        "--stream",
        "3100",
    ]);
    let out = run("latency-probe", &args);
    let json = read_json(&json);
    (out, json)
}

/// The verdict of `percentile` in an `ab` report.
fn verdict<'v>(r: &'v serde_json::Value, percentile: &str) -> &'v serde_json::Value {
    r["ab"]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["percentile"] == percentile)
        .unwrap_or_else(|| panic!("no {percentile} in {r}"))
}

#[test]
fn a_and_a_raises_no_alarm_and_a_planted_slowdown_is_worse() {
    let a_and_a = || {
        let (out, aa) = ab(
            "ab-aa",
            &["--rounds", "11", "--confidence", "0.999", "--fail-on", "worse"],
        );
        assert!(out.status.success(), "A/A: {}", stderr(&out));
        aa
    };
    let changed = |aa: &serde_json::Value| {
        ["p50", "p99"]
            .iter()
            .map(|p| verdict(aa, p))
            .filter(|v| v["verdict"] != "no change" && v["verdict"] != "inconclusive")
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let mut aa = a_and_a();
    let first = changed(&aa);
    if !first.is_empty() {
        eprintln!("A/A found a change, once in ~500 runs by chance; one more A/A: {first:?}");
        aa = a_and_a();
        let again = changed(&aa);
        assert!(again.is_empty(), "A/A twice found a change: {first:?}, then {again:?}");
    }
    for p in ["p50", "p99"] {
        let v = verdict(&aa, p);
        // Around zero: a no change when the interval rules out 5% either way, else
        // inconclusive (a p99 of 11 short rounds on two cores often reaches farther).
        let resolvable = v["resolvable"].as_f64().unwrap();
        let expected = if resolvable <= 0.05 {
            "no change"
        } else {
            "inconclusive"
        };
        assert_eq!(v["verdict"], expected, "A/A {p}: {v}");
        assert_eq!(v["rounds"], 11, "{v}");
        assert!(
            v["ci_low"].as_f64().unwrap() <= 0.0 && v["ci_high"].as_f64().unwrap() >= 0.0,
            "{v}"
        );
    }
    let rounds = aa["ab"]["rounds"].as_array().unwrap();
    let counted = rounds.iter().filter(|r| r.get("set_aside").is_none()).count();
    assert_eq!(counted, 11, "every counted round is in the JSON with its floors");
    assert!(rounds
        .iter()
        .all(|r| r["a"]["count"].as_u64() == Some(3_000) && r["b"]["count"].as_u64() == Some(3_000)));

    let dir = std::env::temp_dir().join(format!("ab-out-{}", std::process::id()));
    // A run in which B, 20 us slower by plant, was faster than A at p50 in some round was
    // disturbed by something else on the machine (a CI run of 2026-11-27: one such round of
    // eight, "no change"): it is set aside once, said so, and run again.
    let (out, planted) = (1..=2)
        .find_map(|attempt| {
            let _ = std::fs::remove_dir_all(&dir);
            let args = ["--rounds", "8", "--b", "--plant-delay-ns 20000", "--fail-on", "worse"];
            let (out, planted) = ab(
                &format!("ab-planted-{attempt}"),
                &[&args[..], &["--out", dir.to_str().unwrap()]].concat(),
            );
            let v = verdict(&planted, "p50");
            let disturbed = v["verdict"] != "worse" && v["b_better_rounds"].as_u64().unwrap_or(0) > 0;
            if attempt == 1 && disturbed {
                eprintln!("planted run 1 set aside: B was faster than A in a round: {v}");
                return None;
            }
            Some((out, planted))
        })
        .expect("the second attempt is always kept");
    let v = verdict(&planted, "p50");
    assert_eq!(v["verdict"], "worse", "planted +20 us at p50: {v}");
    assert!(
        v["change"].as_f64().unwrap() > 1.0 && v["ci_low"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    assert_eq!(v["b_better_rounds"], 0, "{v}");
    assert_eq!(planted["ab"]["b"], "--plant-delay-ns 20000");
    // --fail-on worse: the report is written, then exit 1 naming what got worse.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--fail-on worse: B is worse than A at p50"),
        "{}",
        stderr(&out)
    );
    // --out: each arm's counted rounds merged and as an interval log, one interval per round.
    for arm in ["A", "B"] {
        let hgrm = std::fs::read_to_string(dir.join(format!("{arm}.hgrm"))).unwrap();
        let total = format!("Total count    = {:>12}]", 8 * 3_000);
        assert!(hgrm.contains(&total), "{arm}.hgrm: {total} missing:\n{hgrm}");
        let hlog = std::fs::read_to_string(dir.join(format!("{arm}.hlog"))).unwrap();
        let intervals = hlog
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
            .count();
        assert_eq!(intervals, 8, "{hlog}");
    }
    let svg = std::fs::read_to_string(dir.join("spectrum.svg")).unwrap();
    assert!(
        // +20 us on a p50 of a few us: `+566.2%`, or from 11 times on a ratio, `21.3x`.
        svg.split("B vs A p50 ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('+') || rest.split(' ').next().unwrap().ends_with('x'))
            && svg.contains("worse"),
        "the legend carries the change"
    );
    let json = read_json(&dir.join("ab.json"));
    assert_eq!(json["ab"]["percentiles"], planted["ab"]["percentiles"]);
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("B: --plant-delay-ns 20000") && text.contains("worse"),
        "{text}"
    );
}

/// Too few rounds for an interval: every figure says `cannot tell`, and a note the rounds it
/// needs.
#[test]
fn too_few_rounds_cannot_tell_and_say_how_many_it_needs() {
    let (out, r) = ab("ab-two-rounds", &["--rounds", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for p in ["p50", "p99"] {
        assert_eq!(verdict(&r, p)["verdict"], "cannot tell", "{r}");
    }
    let notes: Vec<&str> = r["ab"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with(
            "cannot tell: 2 counted rounds give no 99% interval; it needs 8 at least (--rounds 8 or more"
        )),
        "{notes:?}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("note: cannot tell: 2 counted rounds"));
}

/// Bad input is refused before anything runs, in one line naming the arm or the flag.
#[test]
fn bad_arms_and_flags_are_refused_before_anything_runs() {
    for (args, says) in [
        (vec!["ab", "--a", "--idle bogus"], "arm A: "),
        (
            vec!["ab", "--b", "--duration 3"],
            "arm B: --duration is set by ab itself",
        ),
        (vec!["ab", "--rounds", "1"], "--rounds 1: give 2 to 1000 rounds"),
        (vec!["ab", "--confidence", "1.5"], "--confidence 1.5"),
        (vec!["ab", "--a", "--idle 'yield"], "--a: an unclosed quote"),
        (
            vec!["ab", "--a-bin", "/nonexistent"],
            "--a-bin /nonexistent: no latency-probe there",
        ),
        (
            vec!["ab", "--", "--json", "x.json"],
            "arm A: --json is set by ab itself",
        ),
        // Before the rounds, not after them: their files would have nowhere to go.
        (
            vec!["ab", "--out", "/dev/null/out"],
            "--out /dev/null/out: cannot write there",
        ),
    ] {
        let out = run("latency-probe", &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
