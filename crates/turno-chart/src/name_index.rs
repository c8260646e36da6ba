//! The exact event names a machine handles, by id, found without hashing
//! the name: a name's length and its first and last bytes (up to eight
//! each) are its key. For a name of at most 16 bytes those cover every byte,
//! so equal keys are equal names; a longer name is compared in full.

use std::sync::Arc;

/// A name's length and its first and last words: for names of at most 16
/// bytes, the name itself.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    len: usize,
    first: u64,
    last: u64,
}

#[inline]
fn key(s: &[u8]) -> Key {
    let n = s.len();
    let word = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes")) as u64;
    let (first, last) = match n {
        8.. => (word(0), word(n - 8)),
        4..=7 => (half(0), half(n - 4)),
        _ => {
            let mut w = 0u64;
            for (i, &b) in s.iter().enumerate() {
                w |= (b as u64) << (8 * i);
            }
            (w, 0)
        }
    };
    Key {
        len: n,
        first,
        last,
    }
}

/// Names to ids (see the module documentation).
pub(crate) struct NameIndex {
    /// Open addressing, linear probing; `None`: empty.
    slots: Box<[Option<(Key, u32)>]>,
    names: Vec<Arc<str>>,
}

impl NameIndex {
    /// The index of `names`, each name's id its position.
    pub(crate) fn new(names: Vec<Arc<str>>) -> Self {
        let size = (names.len() * 2).next_power_of_two().max(4);
        let mut slots = vec![None; size].into_boxed_slice();
        for (id, name) in names.iter().enumerate() {
            let k = key(name.as_bytes());
            let mut i = home(&k, size);
            while slots[i].is_some() {
                i = (i + 1) & (size - 1);
            }
            slots[i] = Some((k, id as u32));
        }
        NameIndex { slots, names }
    }

    /// The id of `name`, if the machine handles that exact name.
    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        let k = key(name.as_bytes());
        let size = self.slots.len();
        let mut i = home(&k, size);
        loop {
            let (sk, id) = self.slots[i]?;
            if sk == k && (k.len <= 16 || *self.names[id as usize] == *name) {
                return Some(id);
            }
            i = (i + 1) & (size - 1);
        }
    }
}

#[inline]
fn home(k: &Key, size: usize) -> usize {
    let h = (k.first ^ k.last.rotate_left(29) ^ k.len as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 40) as usize & (size - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_found_and_no_other() {
        let names: Vec<Arc<str>> = [
            "",
            "A",
            "AB",
            "ABC",
            "PLAY",
            "PAUSE",
            "NORMAL",
            "FORWARD",
            "xstate.done.state.m.a",
            "xstate.done.state.m.b",
            "xstate.after.100.m.a",
            "12345678",
            "123456789",
            "1234567890123456",
            "1234567890123457",
            "12345678901234567",
        ]
        .into_iter()
        .map(Arc::from)
        .collect();
        let index = NameIndex::new(names.clone());
        for (id, n) in names.iter().enumerate() {
            assert_eq!(index.get(n), Some(id as u32), "{n}");
        }
        for other in [
            "B",
            "PLAZ",
            "PLAYS",
            "xstate.done.state.m.c",
            "xstate.done.statX.m.a",
            "1234567890123458",
            "12345678901234568",
            "AB\0",
        ] {
            assert_eq!(index.get(other), None, "{other}");
        }
        assert_eq!(NameIndex::new(Vec::new()).get("A"), None);
    }
}
