//! Generates the C header from the crate's exported items (the committed copy in `include/`
//! is checked against it by the `header_is_current` test), and records the HDF5 library's
//! folder as an rpath so programs linking libh5tile find that libhdf5 with no other setting.

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("h5tile.h");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=HDF5_DIR");

    let mut config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n#define H5TILE_VERSION_MAJOR {}\n#define H5TILE_VERSION_MINOR {}\n#define H5TILE_VERSION_PATCH {}\n",
        env::var("CARGO_PKG_VERSION_MAJOR").unwrap(),
        env::var("CARGO_PKG_VERSION_MINOR").unwrap(),
        env::var("CARGO_PKG_VERSION_PATCH").unwrap(),
    ));
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cannot generate h5tile.h")
        .write_to_file(&out);

    if let Ok(dir) = env::var("HDF5_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}/lib");
    }
}
