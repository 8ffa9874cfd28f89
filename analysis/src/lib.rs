//! Trace analysis, as pure code (Alawneh and Hamou-Lhadj 2022).
//!
//! [`analyze`] is `rankscale analyze`: it unfolds a trace ([`run`]),
//! matches its messages and collectives ([`matching`]), joins each rank's
//! repeats into global communication patterns ([`patterns`]), segments the
//! pattern sequence into phases ([`phases`]), flags slow instances
//! ([`outliers`]) and names their cause ([`slow`]), and ranks slow patterns
//! by Inspection Affinity ([`ahp`]). The numerical building blocks are
//! tested against the worked numbers of the paper:
//!
//! * [`outliers`]: the modified z-score of Iglewicz and Hoaglin on median and
//!   median absolute deviation (Alawneh and Hamou-Lhadj 2022 §4.2, Eqs. 19–21, Table 7);
//! * [`ahp`]: the Analytic Hierarchy Process weights of severity and
//!   complexity and the Inspection Affinity levels (Alawneh and Hamou-Lhadj 2022 §4.3, Tables 8
//!   and 9, Fig. 8);
//! * [`phases`]: phase segmentation by Jensen–Shannon divergence with AIC or
//!   BIC as the stopping rule (Alawneh and Hamou-Lhadj 2022 §2.2, §4.1.2, Table 5).
//!
//! [`desync`] is the desynchronization analytics of Afzal et al. on the MPI time
//! per rank and time step (compact timeline, histograms, correlation, phase
//! space, PCA and k-means++); the `report` crate draws it as SVG in its HTML
//! page. [`perfetto`] writes a trace as a timeline that the Perfetto UI
//! opens.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ahp;
mod analyze;
pub mod clc;
pub mod delay;
pub mod desync;
pub mod matching;
pub mod outliers;
pub mod patterns;
pub mod perfetto;
pub mod phases;
pub mod run;
pub mod slow;
pub mod waitstates;

pub use analyze::{
    AffinityReport, EventAt, Options, PatternReport, PhaseNode, PhaseReport, RankAt, RankString,
    Report, RunData, SlowCallReport, SlowReport, WaitTotal, analyze, analyze_owned,
    analyze_with_data, ranks_text,
};

/// Why a trace could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trace file's data did not decode.
    #[error(transparent)]
    Trace(#[from] trace::Error),
    /// A rank's events could not be projected out of the merged trace.
    #[error("rank {0}: {1}")]
    Project(u32, String),
    /// A rank's timeline ended before its events.
    #[error("rank {rank}: the timeline ends at event {events}, before the rank's events do")]
    TimelineShort {
        /// The rank.
        rank: u32,
        /// Events read when the timeline ran out.
        events: usize,
    },
    /// A rank's timeline and events differ in length.
    #[error("rank {rank}: {events} events but {spans} timeline entries")]
    TimelineLength {
        /// The rank.
        rank: u32,
        /// Its events.
        events: usize,
        /// Its timeline entries.
        spans: usize,
    },
}
