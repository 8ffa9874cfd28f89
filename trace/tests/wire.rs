//! The current format version's wire type writes back exactly the payload
//! it reads: the golden file of the current version (written once by the
//! build that introduced it, see `tests/golden/README.md`), decoded and
//! encoded again, gives the same bytes. A change to the in-memory types
//! that changed the encoding would fail here as well as in the golden
//! files of the older versions.

use std::io::Read;
use std::path::PathBuf;

use trace::TraceFile;
use trace::file::VERSION;

#[test]
fn the_current_version_writes_back_the_payload_it_reads() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/v{VERSION}.trace"));
    let bytes = std::fs::read(&path).unwrap();
    let mut payload = Vec::new();
    flate2::read::ZlibDecoder::new(&bytes[16..])
        .read_to_end(&mut payload)
        .unwrap();
    let f = TraceFile::from_bytes(&bytes).unwrap();
    assert_eq!(f.to_wire().unwrap(), payload);
    assert_eq!(
        TraceFile::from_wire(&payload).unwrap().to_wire().unwrap(),
        payload
    );
}
