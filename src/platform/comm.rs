//! Every MPI call h5tile makes. A `Comm` is either this process alone (`MPI_COMM_NULL`: no
//! MPI call at all, MPI need not be initialised) or a private duplicate of the caller's
//! communicator, freed when dropped. Collectives here never run while the HDF5 lock is held.

use crate::status::{fail, Error, Result, H5TILE_ERR_INVALID_ARGUMENT, H5TILE_ERR_MPI};
use mpi::collective::SystemOperation;
use mpi::ffi::MPI_Comm;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The top bit of a u64, flipped to order unsigned values as signed ones.
const SIGN_BIT: u64 = 1 << 63;

/// Longest error message carried from the failing rank to the others.
const MESSAGE_BYTES: usize = 2048;

/// What the failing rank broadcasts to the others: its error number (4 bytes), then its
/// message (`relay_of`).
const RELAY_BYTES: usize = 4 + MESSAGE_BYTES;

pub enum Comm {
    /// This process alone.
    Solo,
    /// A duplicate of the caller's communicator, so our messages never mix with theirs.
    Mpi(SimpleCommunicator),
}

impl Comm {
    /// This process alone: rank 0 of 1, making no MPI call, so MPI need not be initialised.
    /// What `MPI_COMM_NULL` stands for in the C API.
    pub fn solo() -> Comm {
        Comm::Solo
    }

    /// Wraps the caller's communicator: `MPI_COMM_NULL` means this process alone.
    ///
    /// # Safety
    /// `raw` must be `MPI_COMM_NULL` or a valid intra-communicator handle, and every rank of
    /// it must make the same call (it is collective).
    pub unsafe fn from_raw(raw: MPI_Comm) -> Result<Comm> {
        if raw == mpi::ffi::RSMPI_COMM_NULL {
            return Ok(Comm::solo());
        }
        check_same_mpi()?;
        let (mut initialized, mut finalized) = (0, 0);
        mpi::ffi::MPI_Initialized(&mut initialized);
        mpi::ffi::MPI_Finalized(&mut finalized);
        if initialized == 0 || finalized != 0 {
            return fail(
                H5TILE_ERR_MPI,
                "a communicator was given but MPI is not initialized (call MPI_Init first, or pass \
                 MPI_COMM_NULL to work on this process alone)",
            );
        }
        let mut dup = mpi::ffi::RSMPI_COMM_NULL;
        let rc = mpi::ffi::MPI_Comm_dup(raw, &mut dup);
        if rc != mpi::ffi::MPI_SUCCESS as i32 {
            return fail(
                H5TILE_ERR_MPI,
                format!("MPI_Comm_dup failed with error code {rc}"),
            );
        }
        Ok(Comm::Mpi(SimpleCommunicator::from_raw(dup)))
    }

    pub fn rank(&self) -> usize {
        match self {
            Comm::Solo => 0,
            Comm::Mpi(c) => c.rank() as usize,
        }
    }

    pub fn size(&self) -> usize {
        match self {
            Comm::Solo => 1,
            Comm::Mpi(c) => c.size() as usize,
        }
    }

    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// Waits until every rank has called it.
    pub fn barrier(&self) {
        if let Comm::Mpi(c) = self {
            c.barrier();
        }
    }

    /// Element-wise minimum over all ranks, in place.
    pub fn all_min(&self, values: &mut [u64]) {
        if let Comm::Mpi(c) = self {
            // Reduced as signed integers with the top bit flipped, which orders them as the
            // unsigned values: MPICH 4.0 compares MPI_UINT64_T as signed in MPI_MIN, so
            // u64::MAX ("no failure here") would win over every failure.
            let send: Vec<i64> = values.iter().map(|&v| (v ^ SIGN_BIT) as i64).collect();
            let mut min = vec![0i64; values.len()];
            c.all_reduce_into(&send[..], &mut min[..], SystemOperation::min());
            for (v, m) in values.iter_mut().zip(min) {
                *v = m as u64 ^ SIGN_BIT;
            }
        }
    }

    /// Rank 0's `values` on every rank.
    pub fn broadcast(&self, values: &mut [u64]) {
        if let Comm::Mpi(c) = self {
            c.process_at_rank(0).broadcast_into(values);
        }
    }

    /// Rank 0's `values`, of a length the other ranks need not know, on every rank.
    pub fn broadcast_vec(&self, values: &mut Vec<u64>) {
        let mut len = [values.len() as u64];
        self.broadcast(&mut len);
        values.resize(len[0] as usize, 0);
        self.broadcast(values);
    }

    /// Rank 0's `bytes` on every rank.
    pub fn broadcast_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let mut len = [bytes.len() as u64];
        self.broadcast(&mut len);
        let mut words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_ne_bytes(w)
            })
            .collect();
        self.broadcast_vec(&mut words);
        let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        out.truncate(len[0] as usize);
        out
    }

    /// Rank `root`'s `text` on every rank.
    pub fn broadcast_text(&self, root: usize, text: &mut String) {
        if let Comm::Mpi(c) = self {
            let from = c.process_at_rank(root as i32);
            let mut len = [text.len() as u64];
            from.broadcast_into(&mut len[..]);
            let mut bytes = std::mem::take(text).into_bytes();
            bytes.resize(len[0] as usize, 0);
            from.broadcast_into(&mut bytes[..]);
            *text = String::from_utf8_lossy(&bytes).into_owned();
        }
    }

    /// The ranks that write one subfile together: those of this rank's node (processes that
    /// can share memory), cut into runs of `per_file` consecutive ranks when given. A group
    /// never spans nodes, so one node's `fsync` covers every byte written to its subfile, on
    /// file systems whose clients cache apart (Lustre, GPFS) too. Collective. Returns the
    /// group's communicator and the rank (in this communicator) of the group's first rank.
    pub fn split_groups(&self, per_file: Option<usize>) -> Result<(Comm, usize)> {
        let Comm::Mpi(c) = self else {
            return Ok((Comm::solo(), 0));
        };
        let node = self.node_of(c)?;
        let key = c.rank();
        let group = match per_file {
            Some(k) if k >= 1 && (k as i32) < node.size() => {
                let color = mpi::topology::Color::with_value(node.rank() / k as i32);
                node.split_by_color_with_key(color, key)
                    .ok_or_else(|| Error::new(H5TILE_ERR_MPI, "MPI_Comm_split gave no group"))?
            }
            _ => node,
        };
        let mut first = [c.rank() as u64];
        group.process_at_rank(0).broadcast_into(&mut first[..]);
        Ok((Comm::Mpi(group), first[0] as usize))
    }

    /// How many nodes the ranks are on (`node_of`). Collective.
    pub fn nodes(&self) -> Result<usize> {
        match self {
            Comm::Solo => Ok(1),
            Comm::Mpi(c) => {
                let leader = u64::from(self.node_of(c)?.rank() == 0);
                let mut sum = 0u64;
                c.all_reduce_into(&leader, &mut sum, SystemOperation::sum());
                Ok(sum as usize)
            }
        }
    }

    /// Every rank's `local` (all of the same length), concatenated in rank order on rank 0;
    /// `None` on the other ranks.
    pub fn gather_to_root(&self, local: &[u64]) -> Option<Vec<u64>> {
        match self {
            Comm::Solo => Some(local.to_vec()),
            Comm::Mpi(c) => {
                let root = c.process_at_rank(0);
                if c.rank() == 0 {
                    let mut all = vec![0u64; local.len() * c.size() as usize];
                    root.gather_into_root(local, &mut all[..]);
                    Some(all)
                } else {
                    root.gather_into(local);
                    None
                }
            }
        }
    }

    /// Every rank's `local` (lengths may differ), in rank order on rank 0, one `Vec` per rank;
    /// `None` on the other ranks.
    pub fn gather_varcount_to_root(&self, local: &[u64]) -> Option<Vec<Vec<u64>>> {
        let Comm::Mpi(c) = self else {
            return Some(vec![local.to_vec()]);
        };
        let counts = self.gather_to_root(&[local.len() as u64]);
        let root = c.process_at_rank(0);
        let Some(counts) = counts else {
            root.gather_varcount_into(local);
            return None;
        };
        let counts: Vec<i32> = counts.iter().map(|&n| n as i32).collect();
        let displs: Vec<i32> = counts
            .iter()
            .scan(0, |acc, &n| Some(std::mem::replace(acc, *acc + n)))
            .collect();
        let mut all = vec![0u64; counts.iter().map(|&n| n as usize).sum()];
        {
            let mut partition =
                mpi::datatype::PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(local, &mut partition);
        }
        Some(
            counts
                .iter()
                .zip(&displs)
                .map(|(&n, &d)| all[d as usize..(d + n) as usize].to_vec())
                .collect(),
        )
    }

    /// Whether another thread may make this communicator's MPI calls while the caller's thread
    /// makes its own: always for this process alone; with MPI only at `MPI_THREAD_MULTIPLE`.
    pub fn threads_allowed(&self) -> bool {
        match self {
            Comm::Solo => true,
            Comm::Mpi(_) => thread_level() == "MPI_THREAD_MULTIPLE",
        }
    }

    /// Runs this rank's part `f` (a panic in it becomes `H5TILE_ERR_PANIC`), then agrees on
    /// the outcome like `agree`.
    pub fn agree_on<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.agree(crate::status::catch_panic(f))
    }

    /// Makes every rank return the same outcome: if any rank failed, all ranks fail with the
    /// status of the failure with the lowest status code (lowest rank on ties), its message,
    /// prefixed on the other ranks by the rank it came from, and its error number; a rank that
    /// failed with that same status keeps its own message and number. One allreduce when all
    /// succeed, and one broadcast more when one failed.
    pub fn agree<T>(&self, local: Result<T>) -> Result<T> {
        let Comm::Mpi(c) = self else { return local };
        let rank = c.rank() as u64;
        let mut key = [match &local {
            Ok(_) => u64::MAX,
            Err(e) => ((e.status as u64) << 32) | rank,
        }];
        self.all_min(&mut key);
        if key[0] == u64::MAX {
            return local;
        }
        let (code, source) = ((key[0] >> 32) as u32, (key[0] & 0xffff_ffff) as i32);
        let mut relay = [0u8; RELAY_BYTES];
        if let (true, Err(e)) = (source as u64 == rank, &local) {
            relay = relay_of(e);
        }
        // The number travels with the message: a binding raises by it (EACCES is Python's
        // PermissionError), and every rank must raise the same.
        c.process_at_rank(source).broadcast_into(&mut relay[..]);
        match local {
            // A rank that failed the same way keeps its own message and number (in a fence,
            // every rank already holds the agreed failure of the write).
            Err(e) if source as u64 == rank || e.status as u32 == code => Err(e),
            _ => {
                let (errno, text) = relayed(&relay);
                let status =
                    crate::status::h5tile_status::from_code(code).unwrap_or(H5TILE_ERR_MPI);
                // Already relayed once, it names the rank it came from.
                let text = match text.starts_with("on rank ") {
                    true => text,
                    false => format!("on rank {source}: {text}"),
                };
                Err(Error::new(status, text).with_errno(errno))
            }
        }
    }
}

/// The thread level MPI provides (`MPI_Query_thread`), by name. MPI must be initialised.
pub fn thread_level() -> &'static str {
    let mut provided = 0;
    // SAFETY: MPI_Query_thread writes one int; it may be called from any thread once MPI is
    // initialised, which every caller's communicator implies. The level constants are
    // plain ints rsmpi exports.
    unsafe {
        mpi::ffi::MPI_Query_thread(&mut provided);
        match provided {
            p if p == mpi::ffi::RSMPI_THREAD_MULTIPLE => "MPI_THREAD_MULTIPLE",
            p if p == mpi::ffi::RSMPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
            p if p == mpi::ffi::RSMPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
            _ => "MPI_THREAD_SINGLE",
        }
    }
}

/// `e` as the failing rank broadcasts it: its error number, then its message cut to
/// `MESSAGE_BYTES` and padded with NULs.
fn relay_of(e: &Error) -> [u8; RELAY_BYTES] {
    let mut relay = [0u8; RELAY_BYTES];
    relay[..4].copy_from_slice(&e.errno.to_le_bytes());
    let n = e.message.len().min(MESSAGE_BYTES);
    relay[4..4 + n].copy_from_slice(&e.message.as_bytes()[..n]);
    relay
}

/// The error number and message `relay_of` packed.
fn relayed(relay: &[u8; RELAY_BYTES]) -> (i32, String) {
    let errno = i32::from_le_bytes(relay[..4].try_into().expect("4 bytes"));
    let message = &relay[4..];
    let end = message
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(MESSAGE_BYTES);
    (errno, String::from_utf8_lossy(&message[..end]).into_owned())
}

/// Fortran handle of an MPI object (defined by mpi.h; an `int` in Open MPI and MPICH).
#[allow(non_camel_case_types)]
pub type MPI_Fint = std::ffi::c_int;

/// The Fortran value of `MPI_COMM_NULL`. Where C handles are integers (MPICH and its
/// derivatives) the Fortran value is the C value; Open MPI's C handles are pointers and its
/// Fortran handles fixed indices, `MPI_COMM_NULL` being 2.
fn fortran_comm_null() -> MPI_Fint {
    if std::mem::size_of::<MPI_Comm>() == std::mem::size_of::<MPI_Fint>() {
        unsafe { std::mem::transmute_copy(&mpi::ffi::RSMPI_COMM_NULL) }
    } else {
        2
    }
}

/// The C communicator for Fortran handle `comm`. `MPI_Comm_f2c` may only be called once MPI is
/// initialised; before that only `MPI_COMM_NULL` (this process alone) makes sense.
pub fn comm_from_fortran(comm: MPI_Fint) -> Result<MPI_Comm> {
    // The handle's value, even MPI_COMM_NULL's, means something only to h5tile's own MPI.
    check_same_mpi()?;
    let mut initialized = 0;
    unsafe { mpi::ffi::MPI_Initialized(&mut initialized) };
    if initialized != 0 {
        let c = unsafe { mpi::ffi::RSMPI_Comm_f2c(comm) };
        if !is_our_fortran_handle(comm, c) {
            let built = match built_with_open_mpi() {
                true => "Open MPI",
                false => "MPICH",
            };
            return fail(
                H5TILE_ERR_MPI,
                format!(
                    "the Fortran communicator {comm} is not one of {built}'s, the MPI libh5tile \
                     was built with: the program's Fortran MPI (its `mpi` module or mpif.h) is \
                     another MPI; compile the program and include/h5tile.f90 with {built}'s \
                     mpif90 (CMake's find_package(H5Tile) picks it), or install an h5tile built \
                     with the program's MPI"
                ),
            );
        }
        Ok(c)
    } else if comm == fortran_comm_null() {
        Ok(unsafe { mpi::ffi::RSMPI_COMM_NULL })
    } else {
        fail(
            H5TILE_ERR_MPI,
            "a communicator was given but MPI is not initialized (call MPI_Init first, or pass \
             MPI_COMM_NULL to work on this process alone)",
        )
    }
}

/// The MPI family h5tile was compiled against: Open MPI's handles are pointers, those of
/// MPICH and its derivatives (Intel MPI, Cray MPICH, MVAPICH) are `int`s.
pub(crate) fn built_with_open_mpi() -> bool {
    std::mem::size_of::<MPI_Comm>() == std::mem::size_of::<*const ()>()
}

/// `H5TILE_ERR_MPI` when the MPI library that h5tile's MPI calls reach is not of the family
/// h5tile was built with, as its version string says. (Where handles live cannot tell: a
/// program's copy relocations move Open MPI's `ompi_mpi_comm_world` into the program.) A
/// program built with another MPI's wrapper loads both libraries, its own first, so
/// h5tile's calls land in the program's MPI with handles that mean nothing
/// there: a crash inside MPI, never an error, unless refused here. Safe before `MPI_Init`
/// (`MPI_Get_library_version` may be called any time); decided once per process.
pub fn check_same_mpi() -> Result<()> {
    static VERDICT: std::sync::OnceLock<std::result::Result<(), String>> =
        std::sync::OnceLock::new();
    let verdict = VERDICT.get_or_init(|| {
        // MPICH's longest version string is 8192 bytes, Open MPI's 256.
        let mut text = vec![0 as std::ffi::c_char; 8192];
        let mut len = 0;
        unsafe { mpi::ffi::MPI_Get_library_version(text.as_mut_ptr(), &mut len) };
        let version = unsafe { std::ffi::CStr::from_ptr(text.as_ptr()) }.to_string_lossy();
        let version = version.lines().next().unwrap_or("");
        let version = version.split_whitespace().collect::<Vec<_>>().join(" ");
        // The MPICH family (Intel MPI, Cray MPICH, MVAPICH) never names Open MPI; an Open MPI
        // derivative whose string does not name it would be refused (docs/reliability.md).
        if version.contains("Open MPI") == built_with_open_mpi() {
            return Ok(());
        }
        let reached =
            super::mpi_libraries::library_of(mpi::ffi::MPI_Get_library_version as *const ());
        let others: Vec<String> = super::mpi_libraries::loaded()
            .into_iter()
            .filter(|l| *l != reached)
            .collect();
        // An h5tile for the program's MPI is made with the other family's make flag.
        let (built, make_other) = match built_with_open_mpi() {
            true => ("Open MPI", "MPI=mpich"),
            false => ("MPICH", "MPI=openmpi"),
        };
        let built_files = match others.is_empty() {
            true => "not loaded".to_string(),
            false => others.join(", "),
        };
        Err(format!(
            "this program runs another MPI than libh5tile's: its MPI calls reach '{version}' \
             ({reached}), but libh5tile was built with {built} ({built_files}); build the \
             program with {built}'s compiler wrapper (`pkg-config --variable=mpicc h5tile`; \
             CMake's find_package(H5Tile) picks it), or install an h5tile built with the \
             program's MPI (make install {make_other})"
        ))
    });
    verdict
        .clone()
        .map_err(|message| Error::new(H5TILE_ERR_MPI, message))
}

/// Whether Fortran handle `f`, converted to `c`, is a communicator of h5tile's MPI. Another
/// MPI's `mpi` module gives other numbers (MPICH's MPI_COMM_WORLD is 0x44000000, Open MPI's
/// 0): Open MPI's `MPI_Comm_f2c` answers NULL for an index it has no communicator at (as
/// MPI-2 4.12.4 asks, no error handler); MPICH's handles carry their kind in bits 26-29
/// (1 for communicators: MPI_COMM_NULL is 0x04000000), which its f2c, a cast, keeps.
fn is_our_fortran_handle(f: MPI_Fint, c: MPI_Comm) -> bool {
    if built_with_open_mpi() {
        // Same size (checked by `built_with_open_mpi`): a pointer, NULL for no communicator.
        let pointer: usize = unsafe { std::mem::transmute_copy(&c) };
        pointer != 0
    } else {
        (f as u32 & 0x3c00_0000) == 0x0400_0000
    }
}

/// The environment variable making runs of that many consecutive ranks count as nodes.
pub const RANKS_PER_NODE_VARIABLE: &str = "H5TILE_RANKS_PER_NODE";

/// `H5TILE_RANKS_PER_NODE` read: None where unset or empty.
fn pretended_node_size() -> Result<Option<i32>> {
    let value = std::env::var(RANKS_PER_NODE_VARIABLE).ok();
    let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match v.parse::<i32>() {
        Ok(k) if k >= 1 => Ok(Some(k)),
        _ => fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("{RANKS_PER_NODE_VARIABLE}={v}: expected a number of ranks, 1 or more"),
        ),
    }
}

impl Comm {
    /// The ranks of this communicator (`c`) on this rank's node: those that can share memory
    /// (`MPI_COMM_TYPE_SHARED`), or, with `H5TILE_RANKS_PER_NODE=K`, runs of K consecutive
    /// ranks, so that one machine stands in for several nodes. Collective; a bad value fails
    /// on every rank.
    fn node_of(&self, c: &SimpleCommunicator) -> Result<SimpleCommunicator> {
        match self.agree(pretended_node_size())? {
            None => Ok(c.split_shared(c.rank())),
            Some(k) => {
                let color = mpi::topology::Color::with_value(c.rank() / k);
                c.split_by_color_with_key(color, c.rank())
                    .ok_or_else(|| Error::new(H5TILE_ERR_MPI, "MPI_Comm_split gave no node"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_mpi_init_only_the_null_handle_is_accepted() {
        assert!(comm_from_fortran(fortran_comm_null()).is_ok());
        let e = comm_from_fortran(fortran_comm_null() + 1).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_MPI);
    }
    use crate::status::*;

    #[test]
    fn solo_is_rank_zero_of_one_and_makes_no_mpi_call() {
        // MPI is never initialised in unit tests: any MPI call here would abort the process.
        // MPI_COMM_NULL from the C API is the same communicator.
        let null = unsafe { Comm::from_raw(mpi::ffi::RSMPI_COMM_NULL) }.unwrap();
        for c in [Comm::solo(), null] {
            assert_eq!((c.rank(), c.size(), c.is_root()), (0, 1, true));
            let mut v = [5u64, 7];
            c.all_min(&mut v);
            c.broadcast(&mut v);
            assert_eq!(v, [5, 7]);
            assert_eq!(c.gather_to_root(&[1, 2]), Some(vec![1, 2]));
            assert!(c.threads_allowed());
            let e: Result<()> = fail(H5TILE_ERR_SHAPE, "gap");
            assert_eq!(c.agree(e).unwrap_err(), Error::new(H5TILE_ERR_SHAPE, "gap"));
        }
    }

    /// What a failing rank sends the others in `agree` carries its error number beside its
    /// message (the other ranks raise the same class by it), the message cut to
    /// `MESSAGE_BYTES`. (`agree` over several ranks: python/tests/test_mpi.py, fortran_api.)
    #[test]
    fn a_relayed_failure_keeps_its_errno_and_message() {
        let e = Error::new(
            H5TILE_ERR_IO,
            "Permission denied (os error 13): cannot create '/x'",
        )
        .with_errno(libc::EACCES);
        assert_eq!(relayed(&relay_of(&e)), (libc::EACCES, e.message.clone()));
        assert_eq!(
            relayed(&relay_of(&Error::new(H5TILE_ERR_SHAPE, "gap"))),
            (0, "gap".into())
        );
        let long =
            Error::new(H5TILE_ERR_IO, "x".repeat(MESSAGE_BYTES + 9)).with_errno(libc::ENOSPC);
        assert_eq!(
            relayed(&relay_of(&long)),
            (libc::ENOSPC, "x".repeat(MESSAGE_BYTES))
        );
    }

    #[test]
    fn a_communicator_without_mpi_init_is_an_mpi_error() {
        let e = unsafe { Comm::from_raw(mpi::ffi::RSMPI_COMM_WORLD) }
            .err()
            .unwrap();
        assert_eq!(e.status, H5TILE_ERR_MPI);
        assert!(e.message.contains("not initialized"), "{}", e.message);
    }
}
