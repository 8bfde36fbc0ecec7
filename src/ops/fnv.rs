//! 64-bit FNV-1a: enough to tell apart what ranks compare through one small allreduce
//! (arguments, file names, file versions), never stored.

pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// A variable-length field: its bytes, then its length, so ("ab","c") ≠ ("a","bc").
    pub fn bytes(&mut self, b: &[u8]) {
        self.bytes_raw(b);
        self.u64(b.len() as u64);
    }

    pub fn u64(&mut self, v: u64) {
        self.bytes_raw(&v.to_le_bytes());
    }

    pub fn bytes_raw(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 ^ x as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn value(&self) -> u64 {
        self.0
    }
}
