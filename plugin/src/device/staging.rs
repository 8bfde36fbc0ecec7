//! The compat path's pipeline: device memory moves to and from a file through at most two
//! host staging buffers of `bounce` bytes, the copy of one piece overlapping the file I/O of
//! the next. Memory stays at two buffers whatever the request size, so nothing stalls on a
//! large array. The pipeline is written against [`Engine`] so its ordering is tested without a
//! GPU; the CUDA engine (pinned buffers, one stream, one event per buffer) is in `compat`.

/// Asynchronous copies between the device and two host staging slots.
pub trait Engine {
    /// Host view of staging slot `slot` (0 or 1), `len` bytes.
    fn slot(&mut self, slot: usize, len: usize) -> &mut [u8];
    /// Starts copying `len` bytes of slot `slot` to device offset `dev_off`.
    fn upload(&mut self, slot: usize, dev_off: usize, len: usize) -> Result<(), String>;
    /// Starts copying `len` bytes at device offset `dev_off` into slot `slot`.
    fn download(&mut self, slot: usize, dev_off: usize, len: usize) -> Result<(), String>;
    /// Waits until the last copy started on slot `slot` has finished.
    fn wait(&mut self, slot: usize) -> Result<(), String>;
}

/// `(offset, length)` of the `bounce`-sized pieces of `0..len`.
pub fn pieces(len: usize, bounce: usize) -> impl Iterator<Item = (usize, usize)> {
    let bounce = bounce.max(1);
    (0..len.div_ceil(bounce)).map(move |i| (i * bounce, bounce.min(len - i * bounce)))
}

/// Device read: `fill(offset, part)` fills each piece from the file into a slot, which is
/// then copied to the device while the next piece is filled into the other slot.
pub fn read_to_device<E: Engine>(
    engine: &mut E,
    len: usize,
    bounce: usize,
    mut fill: impl FnMut(usize, &mut [u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut busy = [false; 2];
    for (k, (off, n)) in pieces(len, bounce).enumerate() {
        let slot = k % 2;
        if busy[slot] {
            engine.wait(slot)?;
        }
        fill(off, engine.slot(slot, n))?;
        engine.upload(slot, off, n)?;
        busy[slot] = true;
    }
    for (slot, busy) in busy.into_iter().enumerate() {
        if busy {
            engine.wait(slot)?;
        }
    }
    Ok(())
}

/// Device write: each piece is copied from the device into a slot and `drain(offset, part)`
/// writes it to the file, while the next piece is already being copied into the other slot.
pub fn write_from_device<E: Engine>(
    engine: &mut E,
    len: usize,
    bounce: usize,
    mut drain: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let all: Vec<(usize, usize)> = pieces(len, bounce).collect();
    if let Some(&(off, n)) = all.first() {
        engine.download(0, off, n)?;
    }
    for (k, &(off, n)) in all.iter().enumerate() {
        if let Some(&(next_off, next_n)) = all.get(k + 1) {
            // The other slot's last piece was drained in the previous step.
            engine.download((k + 1) % 2, next_off, next_n)?;
        }
        engine.wait(k % 2)?;
        drain(off, engine.slot(k % 2, n))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host "device" whose copies take effect only when waited for, as an asynchronous copy
    /// may: a pipeline that reuses a slot before waiting, or drains one before its copy has
    /// landed, produces wrong bytes here.
    struct Deferred {
        device: Vec<u8>,
        slots: [Vec<u8>; 2],
        pending: [Option<(bool, usize, usize)>; 2], // (to_device, dev_off, len)
        biggest_slot: usize,
    }

    impl Deferred {
        fn new(device: Vec<u8>) -> Deferred {
            Deferred {
                device,
                slots: [Vec::new(), Vec::new()],
                pending: [None, None],
                biggest_slot: 0,
            }
        }
    }

    impl Engine for Deferred {
        fn slot(&mut self, slot: usize, len: usize) -> &mut [u8] {
            assert!(
                self.pending[slot].is_none(),
                "slot {slot} touched while a copy is in flight"
            );
            self.biggest_slot = self.biggest_slot.max(len);
            self.slots[slot].resize(len, 0xEE);
            &mut self.slots[slot][..len]
        }
        fn upload(&mut self, slot: usize, dev_off: usize, len: usize) -> Result<(), String> {
            assert!(
                self.pending[slot].is_none(),
                "slot {slot} reused before its copy was waited for"
            );
            self.pending[slot] = Some((true, dev_off, len));
            Ok(())
        }
        fn download(&mut self, slot: usize, dev_off: usize, len: usize) -> Result<(), String> {
            assert!(
                self.pending[slot].is_none(),
                "slot {slot} reused before its copy was waited for"
            );
            self.pending[slot] = Some((false, dev_off, len));
            Ok(())
        }
        fn wait(&mut self, slot: usize) -> Result<(), String> {
            if let Some((to_device, off, len)) = self.pending[slot].take() {
                self.slots[slot].resize(len.max(self.slots[slot].len()), 0);
                if to_device {
                    self.device[off..off + len].copy_from_slice(&self.slots[slot][..len]);
                } else {
                    self.slots[slot][..len].copy_from_slice(&self.device[off..off + len]);
                }
            }
            Ok(())
        }
    }

    fn pattern(len: usize, seed: usize) -> Vec<u8> {
        (0..len).map(|i| ((i * 31 + seed) % 253) as u8).collect()
    }

    #[test]
    fn pieces_cover_the_request_once_in_order() {
        assert_eq!(pieces(10, 4).collect::<Vec<_>>(), [(0, 4), (4, 4), (8, 2)]);
        assert_eq!(pieces(8, 4).collect::<Vec<_>>(), [(0, 4), (4, 4)]);
        assert_eq!(pieces(0, 4).count(), 0);
    }

    #[test]
    fn a_read_larger_than_both_buffers_arrives_whole_through_two_slots() {
        for (len, bounce) in [
            (10_000, 1024),
            (1024, 1024),
            (1000, 4096),
            (3 * 1024 + 1, 1024),
        ] {
            let file = pattern(len, 7);
            let mut engine = Deferred::new(vec![0u8; len]);
            read_to_device(&mut engine, len, bounce, |off, part| {
                part.copy_from_slice(&file[off..off + part.len()]);
                Ok(())
            })
            .unwrap();
            assert!(engine.device == file, "len {len}, bounce {bounce}");
            assert!(engine.biggest_slot <= bounce);
        }
    }

    #[test]
    fn a_write_larger_than_both_buffers_reaches_the_file_whole() {
        for (len, bounce) in [
            (10_000, 1024),
            (1024, 1024),
            (1000, 4096),
            (5 * 1024 + 3, 1024),
        ] {
            let device = pattern(len, 3);
            let mut engine = Deferred::new(device.clone());
            let mut file = vec![0u8; len];
            let mut next = 0;
            write_from_device(&mut engine, len, bounce, |off, part| {
                assert_eq!(off, next, "pieces drained out of order");
                next += part.len();
                file[off..off + part.len()].copy_from_slice(part);
                Ok(())
            })
            .unwrap();
            assert!(file == device, "len {len}, bounce {bounce}");
            assert!(engine.biggest_slot <= bounce);
        }
    }

    #[test]
    fn a_failing_file_operation_stops_the_pipeline_with_its_message() {
        let mut engine = Deferred::new(vec![0u8; 4096]);
        let err = read_to_device(&mut engine, 4096, 1024, |off, _| {
            if off >= 2048 {
                Err("disk on fire".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err, "disk on fire");
    }
}
