//! Records the HDF5 library's folder as an rpath of the tool and its tests (as the library's
//! own build does for its targets), so they find that libhdf5 with no other setting.

fn main() {
    println!("cargo:rerun-if-env-changed=HDF5_DIR");
    if let Ok(dir) = std::env::var("HDF5_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}/lib");
    }
}
