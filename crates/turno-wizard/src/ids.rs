//! Unguessable identifiers: session ids, draft-link tokens, card tokens,
//! all from the operating system's CSPRNG (`getrandom`).

/// `bytes` random bytes from the OS CSPRNG, as lowercase hex.
///
/// Panics only if the operating system has no random source at all, in
/// which case no session could be made safe anyway.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source failed");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A session id: 128 bits.
pub fn session_id() -> String {
    random_hex(16)
}

/// Is `s` shaped like an id from [`random_hex`] of `bytes` bytes? (Checked
/// before any lookup, so junk never reaches the store.)
pub fn is_hex_id(s: &str, bytes: usize) -> bool {
    s.len() == bytes * 2
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
