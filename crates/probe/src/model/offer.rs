//! What an offer or `try_claim` returned, as reports count it: the keys of a report's `offer`
//! map and of the echo retries, in the order the text report lists them.

use std::collections::BTreeMap;

/// One outcome of an offer or `try_claim`. Aeron's transient and final failures each have their
/// own; a message too long for the publication and a code Aeron did not document are `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OfferOutcome {
    /// The claim or offer succeeded.
    Ok,
    /// No subscriber was connected.
    NotConnected,
    /// The publication limit was reached.
    BackPressured,
    /// A term rotation (Aeron's admin action).
    AdminAction,
    /// The publication was closed.
    Closed,
    /// The stream reached its maximum position.
    MaxPositionExceeded,
    /// Anything else (message too long, an undocumented code).
    Other,
}

impl OfferOutcome {
    /// Every outcome, in report order.
    pub const ALL: [OfferOutcome; 7] = [
        OfferOutcome::Ok,
        OfferOutcome::NotConnected,
        OfferOutcome::BackPressured,
        OfferOutcome::AdminAction,
        OfferOutcome::Closed,
        OfferOutcome::MaxPositionExceeded,
        OfferOutcome::Other,
    ];

    /// Its key in reports (`ok`, `back_pressured`, …; the names `messaging::OfferError::name`
    /// gives for the same failures; a lost client is no outcome: the run stops).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            OfferOutcome::Ok => "ok",
            OfferOutcome::NotConnected => "not_connected",
            OfferOutcome::BackPressured => "back_pressured",
            OfferOutcome::AdminAction => "admin_action",
            OfferOutcome::Closed => "closed",
            OfferOutcome::MaxPositionExceeded => "max_position_exceeded",
            OfferOutcome::Other => "other",
        }
    }
}

/// Offer/try_claim outcome names, in the order the text report lists them.
pub const OFFER_OUTCOMES: [&str; 7] = {
    let mut names = [""; 7];
    let mut i = 0;
    while i < names.len() {
        names[i] = OfferOutcome::ALL[i].name();
        i += 1;
    }
    names
};

/// How often each outcome happened. Counting is an array increment: fit for a hot loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OfferTally([u64; 7]);

impl OfferTally {
    /// Counts one `outcome`.
    #[inline]
    pub fn count(&mut self, outcome: OfferOutcome) {
        self.0[outcome as usize] += 1;
    }

    /// How often `outcome` happened.
    #[must_use]
    pub fn get(&self, outcome: OfferOutcome) -> u64 {
        self.0[outcome as usize]
    }

    /// Every outcome with its count (zeros included), in report order.
    pub fn iter(&self) -> impl Iterator<Item = (OfferOutcome, u64)> + '_ {
        OfferOutcome::ALL.into_iter().map(|o| (o, self.get(o)))
    }

    /// The report's `offer` map: every outcome's name and count.
    #[must_use]
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        self.iter().map(|(o, n)| (o.name().to_owned(), n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_names_are_unique_and_in_report_order() {
        assert_eq!(
            OFFER_OUTCOMES,
            [
                "ok",
                "not_connected",
                "back_pressured",
                "admin_action",
                "closed",
                "max_position_exceeded",
                "other"
            ]
        );
        for (i, o) in OfferOutcome::ALL.into_iter().enumerate() {
            assert_eq!(o as usize, i, "{o:?}: ALL is in declaration order");
        }
    }

    #[test]
    fn a_tally_counts_each_outcome_apart_and_maps_every_name() {
        let mut t = OfferTally::default();
        t.count(OfferOutcome::Ok);
        t.count(OfferOutcome::Ok);
        t.count(OfferOutcome::BackPressured);
        assert_eq!(
            (
                t.get(OfferOutcome::Ok),
                t.get(OfferOutcome::BackPressured),
                t.get(OfferOutcome::Other)
            ),
            (2, 1, 0)
        );
        let m = t.to_map();
        assert_eq!(m.len(), OfferOutcome::ALL.len());
        assert_eq!(m["ok"], 2);
        assert_eq!(m["back_pressured"], 1);
    }
}
