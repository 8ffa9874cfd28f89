//! `mpi-functions.txt` as the build scripts read it (`trace/listed.rs`)
//! agrees with the event model: every listed function is an operation of
//! its family, in code order after `Pcontrol`, and the families the shim's
//! generator leaves to hand-written wrappers (`DETAILED`) are exactly the
//! ones `Family::is_generic` says are detailed.

#[path = "../listed.rs"]
mod listed;

use trace::Op;

#[test]
fn the_list_and_the_event_model_agree() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/mpi-functions.txt")).unwrap();
    let lines = listed::parse(&text);
    let first = Op::ALL.iter().position(|&o| o == Op::Pcontrol).unwrap() + 1;
    assert_eq!(Op::ALL.len(), first + lines.len());
    for (l, &op) in lines.iter().zip(&Op::ALL[first..]) {
        assert_eq!(op.name(), l.name);
        assert_eq!(format!("{:?}", op), listed::variant(l.name));
        assert_eq!(format!("{:?}", op.family()), l.family, "{}", l.name);
        assert_eq!(
            op.is_generic(),
            !listed::DETAILED.contains(&l.family),
            "{}: {}",
            l.name,
            l.family
        );
        if op.is_generic() {
            assert_eq!(op.has_comm(), l.comm, "{}", l.name);
        }
    }
    for &op in Op::ALL {
        let f = format!("{:?}", op.family());
        assert_eq!(
            op.is_generic(),
            !listed::DETAILED.contains(&f.as_str()),
            "{f}"
        );
    }
}
