//! Arbitrary bytes read as one WAL segment: the reader must return records
//! or a typed error, never panic, loop or allocate without bound.
#![no_main]

use ferrite_wal::RecordReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A small record cap keeps decompression bombs from tripping the
    // fuzzer's memory limit; the reader reports them as corruption.
    let mut reader = RecordReader::from_bytes(data.to_vec()).with_max_record_size(16 << 20);
    let mut records = 0usize;
    loop {
        match reader.next_record() {
            Ok(Some(rec)) => {
                records += 1;
                std::hint::black_box(rec);
            }
            Ok(None) => break,
            Err(err) => {
                // Errors are sticky and always carry a position in the segment.
                if let Some(c) = err.as_corruption() {
                    assert_eq!(c.segment, 0);
                    assert!(c.offset <= data.len() as u64);
                }
                assert!(reader.next_record().is_err());
                break;
            }
        }
    }
    assert!(records <= data.len() / 7);
});
