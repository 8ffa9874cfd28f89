//! Trace analysis, as pure code (seed 000).
//!
//! The `rankscale analyze` command (issue "Analysis I") will find
//! communication patterns, segment them into phases, flag slow instances and
//! rank slow patterns by Inspection Affinity. This crate holds the numerical
//! building blocks, each tested against the worked numbers of the paper:
//!
//! * [`outliers`]: the modified z-score of Iglewicz and Hoaglin on median and
//!   median absolute deviation (seed 000 §4.2, Eqs. 19–21, Table 7);
//! * [`ahp`]: the Analytic Hierarchy Process weights of severity and
//!   complexity and the Inspection Affinity levels (seed 000 §4.3, Tables 8
//!   and 9, Fig. 8);
//! * [`phases`]: phase segmentation by Jensen–Shannon divergence with AIC or
//!   BIC as the stopping rule (seed 000 §2.2, §4.1.2, Table 5).

#![warn(missing_docs)]

pub mod ahp;
pub mod outliers;
pub mod phases;
