//! The MPI libraries loaded in this process, and a warning when libh5tile is loaded into a
//! process that holds two. A program built with another MPI's wrappers (`mpif90.mpich` against
//! an h5tile built with Open MPI) loads both: its own through its wrapper's libraries, and
//! libh5tile's. The dynamic linker may then bind the program's own MPI calls to libh5tile's
//! MPI (`libmpichfort`'s `mpi_init_` reaching Open MPI's `MPI_Init`), and its first
//! `MPI_Comm_rank` crashes inside MPI, before any h5tile call could refuse it. The warning is
//! printed when the library is loaded, so the crash comes after a line that explains it.

use std::path::PathBuf;

/// The file of the loaded library holding the code at `address`.
pub fn library_of(address: *const ()) -> String {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    match unsafe { libc::dladdr(address as *const libc::c_void, &mut info) } {
        0 => "an unknown library".to_string(),
        _ if info.dli_fname.is_null() => "an unknown library".to_string(),
        _ => unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    }
}

/// The MPI libraries loaded in this process (`libmpi.so.*`, `libmpich.so.*`, ...), as loaded.
pub fn loaded() -> Vec<String> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        out: *mut libc::c_void,
    ) -> libc::c_int {
        let out = &mut *(out as *mut Vec<String>);
        if !(*info).dlpi_name.is_null() {
            let name = std::ffi::CStr::from_ptr((*info).dlpi_name).to_string_lossy();
            let file = name.rsplit('/').next().unwrap_or("");
            if file.starts_with("libmpi.so") || file.starts_with("libmpich.so") {
                out.push(name.into_owned());
            }
        }
        0
    }
    let mut out: Vec<String> = Vec::new();
    unsafe {
        libc::dl_iterate_phdr(
            Some(each),
            &mut out as *mut Vec<String> as *mut libc::c_void,
        )
    };
    out
}

/// The MPI family a library file belongs to, from its name: MPICH's ABI is `libmpich.so.12`
/// or, under the ABI-compatible names Intel MPI and mpi4py's wheels use, `libmpi.so.12`;
/// Open MPI's `libmpi.so` carries other numbers (40 for Open MPI 3 to 5).
fn family_of(path: &str) -> &'static str {
    let file = path.rsplit('/').next().unwrap_or(path);
    if file.starts_with("libmpich.so") || file.starts_with("libmpi.so.12") {
        "MPICH"
    } else {
        "Open MPI"
    }
}

/// The warning for the MPI libraries `paths` (as loaded), None unless two different files of
/// two families are among them. A file loaded under two names (mpi4py's `libmpi.so.12` link
/// to `libmpich.so.12`) counts once; `built` is the family libh5tile was built with.
pub fn two_mpis_warning(paths: &[String], built: &str) -> Option<String> {
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    for path in paths {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
        if !files.iter().any(|(f, _)| *f == real) {
            files.push((real, path));
        }
    }
    let families: Vec<&str> = files.iter().map(|(_, p)| family_of(p)).collect();
    if !families.iter().any(|f| *f != families[0]) {
        return None;
    }
    let named: Vec<String> = files
        .iter()
        .zip(&families)
        .map(|((_, path), family)| format!("{path} ({family})"))
        .collect();
    let make_other = match built {
        "Open MPI" => "MPI=mpich",
        _ => "MPI=openmpi",
    };
    Some(format!(
        "h5tile: warning: this process has loaded two MPI libraries, {}; libh5tile was built \
         with {built}. The program's own MPI calls may reach the other library and crash \
         inside MPI: build the program, and include/h5tile.f90 for Fortran, with {built}'s \
         compiler wrappers (`pkg-config --variable=mpicc h5tile`; CMake's \
         find_package(H5Tile) picks them), or install an h5tile built with the program's MPI \
         (make install {make_other})",
        named.join(" and ")
    ))
}

/// Runs when libh5tile is loaded, after the libraries it and the program need are mapped and
/// before the program's `main` (or, under `dlopen`, before `dlopen` returns).
extern "C" fn warn_of_two_mpis_at_load() {
    let built = match super::comm::built_with_open_mpi() {
        true => "Open MPI",
        false => "MPICH",
    };
    if let Some(warning) = two_mpis_warning(&loaded(), built) {
        eprintln!("{warning}");
    }
}

#[used]
#[link_section = ".init_array"]
static WARN_OF_TWO_MPIS_AT_LOAD: extern "C" fn() = warn_of_two_mpis_at_load;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn one_mpi_is_no_warning() {
        let one = names(&["/usr/lib/x86_64-linux-gnu/libmpi.so.40"]);
        assert_eq!(two_mpis_warning(&one, "Open MPI"), None);
        assert_eq!(two_mpis_warning(&[], "Open MPI"), None);
    }

    #[test]
    fn two_families_are_named_with_the_way_out() {
        let two = names(&[
            "/lib/x86_64-linux-gnu/libmpi.so.40",
            "/lib/x86_64-linux-gnu/libmpich.so.12",
        ]);
        let warning = two_mpis_warning(&two, "Open MPI").unwrap();
        assert!(warning.contains(
            "/lib/x86_64-linux-gnu/libmpi.so.40 (Open MPI) and \
             /lib/x86_64-linux-gnu/libmpich.so.12 (MPICH)"
        ));
        assert!(warning.contains("make install MPI=mpich"), "{warning}");
    }

    /// mpi4py's wheels look for MPICH as `libmpi.so.12`: the same family, never a warning.
    #[test]
    fn mpich_under_its_abi_name_is_mpich() {
        let both = names(&["/opt/abi/libmpi.so.12", "/usr/lib/libmpich.so.12"]);
        assert_eq!(two_mpis_warning(&both, "MPICH"), None);
    }

    /// The test binary itself links libh5tile's MPI alone: the hook found nothing to say.
    #[test]
    fn this_process_has_one_mpi() {
        let built = match crate::platform::comm::built_with_open_mpi() {
            true => "Open MPI",
            false => "MPICH",
        };
        assert_eq!(loaded().len(), 1, "{:?}", loaded());
        assert_eq!(two_mpis_warning(&loaded(), built), None);
    }
}
