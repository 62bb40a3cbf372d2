//! `rwdump BODY HEADERS`: decodes a remote write request body the way the
//! server will and prints the answer and appends in the dump format of
//! `ferrite_remote::text` (compared with Prometheus' by interop/remote_test.go).
//! HEADERS is a file of `content-type: V` / `content-encoding: V` lines.

use std::process::ExitCode;

use ferrite_remote::{decode_request, text, DecodeOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [body, headers] = args.as_slice() else {
        eprintln!("usage: rwdump BODY HEADERS");
        return ExitCode::from(2);
    };
    let (body, headers) = match (std::fs::read(body), std::fs::read_to_string(headers)) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("rwdump: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (ct, ce) = text::parse_headers(&headers);
    let res = decode_request(
        ct.as_deref(),
        ce.as_deref(),
        &body,
        &DecodeOptions::default(),
    );
    print!("{}", text::render_response(&res));
    ExitCode::SUCCESS
}
