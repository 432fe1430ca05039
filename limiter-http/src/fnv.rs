//! FNV-1a, 64 bits: a few instructions a byte, fixed across builds and instances, for
//! hashing the program's own names and for choosing clients by a hash every instance
//! agrees on. Not for keys a client picks to collide where that would cost more than a
//! comparison.

use std::hash::Hasher;

/// FNV-1a as a `Hasher`.
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
