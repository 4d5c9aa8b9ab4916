//! The shapes only the API sends, beyond the day summaries of `crate::summary`: the day list,
//! the 202 answer for a day being fetched and the one error envelope. Together with `summary` and
//! [`super::fetch::Status`] they are the whole vocabulary of the API; a test generates the UI's
//! TypeScript types from them (`web/src/app/api.gen.ts`) and fails if the committed file differs.

use serde::Serialize;

use super::fetch::Status;
use crate::follow::FollowStatus;
use crate::summary::DayInfo;

/// `GET /api/days`: the stored days and how fresh they are.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DayList {
    /// Every stored day with its totals, oldest first.
    pub days: Vec<DayInfo>,
    /// When the newest day was stored (UTC, `YYYY-MM-DDTHH:MM:SSZ`); null for an empty store.
    pub ingested_at: Option<String>,
    /// The follower (`--follow`): whether it is on, the newest day the source had, when it last
    /// looked.
    pub follow: FollowStatus,
}

/// `GET /api/days/{date}` for a day not stored yet: 202 and where to follow the fetch.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Fetching {
    /// Always `"fetching"`.
    #[cfg_attr(test, ts(type = "\"fetching\""))]
    pub status: &'static str,
    /// The day, `YYYY-MM-DD`.
    pub date: String,
    /// URL of the Server-Sent Events stream of the fetch's progress.
    pub progress: String,
    /// Where the fetch is now.
    pub current: Status,
}

/// Every error status (400–599) has this body.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ErrorBody {
    /// One line saying what and where.
    pub error: String,
}

#[cfg(test)]
#[path = "../../../../tests/ts_types.rs"]
mod ts_types;

#[cfg(test)]
mod tests {
    use super::ts_types;
    use super::*;
    use crate::context::*;
    use crate::summary::*;
    use ts_rs::TS;

    /// web/src/app/api.gen.ts is what the API's Rust types generate, in dependency order.
    #[test]
    fn typescript_types_match_the_rust_ones() {
        let decls = [
            Totals::decl(),
            Hour::decl(),
            Behaviour::decl(),
            Mix::decl(),
            Facts::decl(),
            Profile::decl(),
            Whale::decl(),
            DaySummary::decl(),
            DayInfo::decl(),
            FollowStatus::decl(),
            DayList::decl(),
            Download::decl(),
            WhaleDetail::decl(),
            PackageDay::decl(),
            PackageTotals::decl(),
            Bin::decl(),
            Rank::decl(),
            Distribution::decl(),
            PackageReport::decl(),
            PackageComparison::decl(),
            TopPackage::decl(),
            TrendingPackage::decl(),
            TopList::decl(),
            CalendarDay::decl(),
            Calendar::decl(),
            PackageName::decl(),
            TrendDay::decl(),
            Trends::decl(),
            Status::decl(),
            Fetching::decl(),
            ErrorBody::decl(),
        ];
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/src/app/api.gen.ts");
        ts_types::check(
            &path,
            "// Generated from the Rust types (crates/cranwhales/src/summary.rs, context.rs,\n\
             // follow.rs, server/wire.rs, server/fetch.rs) by `CRANWHALES_WRITE_TS=1 cargo test -p cranwhales wire`. Do not edit.\n\n",
            &decls,
            "CRANWHALES_WRITE_TS",
            "CRANWHALES_WRITE_TS=1 cargo test -p cranwhales wire",
        );
    }

    fn json<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn progress_events_and_bodies_serialise_as_declared() {
        assert_eq!(
            json(&Status::Downloading {
                done: 5,
                total: None
            }),
            r#"{"phase":"downloading","done":5,"total":null}"#
        );
        assert_eq!(
            json(&Status::Failed {
                status: 404,
                error: "x".into()
            }),
            r#"{"phase":"error","status":404,"error":"x"}"#
        );
        assert_eq!(json(&Status::Queued), r#"{"phase":"queued"}"#);
        let f = Fetching {
            status: "fetching",
            date: "2012-10-02".into(),
            progress: "/api/days/2012-10-02/progress".into(),
            current: Status::Starting,
        };
        assert_eq!(
            json(&f),
            r#"{"status":"fetching","date":"2012-10-02","progress":"/api/days/2012-10-02/progress","current":{"phase":"starting"}}"#
        );
    }
}
