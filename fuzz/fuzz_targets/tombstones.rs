#![no_main]
//! Tombstones file: arbitrary bytes decoded, also behind a valid header and
//! CRC so the entry decoder and interval merging are reached. Whatever
//! decodes (with well-formed intervals) must encode and decode back to the
//! same value. Must never panic.
use ferrite_block::Tombstones;
use libfuzzer_sys::fuzz_target;

fn check(b: &[u8]) {
    if let Ok(t) = Tombstones::decode(b) {
        // Inverted intervals (mint > maxt) are kept as Prometheus keeps
        // them, and need not survive a rewrite unchanged; all others must.
        if t.iter()
            .flat_map(|(_, ivs)| ivs.iter())
            .any(|iv| iv.mint > iv.maxt)
        {
            return;
        }
        let enc = t.encode();
        assert_eq!(Tombstones::decode(&enc).expect("our own file decodes"), t);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut f = 0x0130_BA30u32.to_be_bytes().to_vec();
    f.push(1);
    f.extend_from_slice(data);
    f.extend_from_slice(&crc32c_of(data).to_be_bytes());
    check(&f);
});

/// CRC-32C, bitwise (the fuzz crate does not depend on crc32c).
fn crc32c_of(b: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &x in b {
        crc ^= u32::from(x);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
