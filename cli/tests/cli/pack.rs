//! `pack`: every element type and layout made contiguous and self-contained, other objects kept.

use super::*;

/// The bytes of element `flat` (its index in C order) of a test array of `dtype`: 0 or 1 for
/// bool, a pattern of every byte value otherwise (NaNs included: nothing converts them).
fn element_bytes(dtype: Dtype, flat: u64) -> Vec<u8> {
    match dtype {
        Dtype::Bool => vec![(flat % 3 == 1) as u8],
        _ => (0..dtype.size() as u64)
            .map(|b| ((flat * 37 + b * 11 + 5) % 251) as u8)
            .collect(),
    }
}

/// Writes `dataset` of `dtype` and shape `global` in the tiles `blocks` ((offset, shape) each),
/// element `flat` holding `element_bytes(dtype, flat)`; returns the whole array's bytes.
fn write_blocks(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    blocks: &[(Vec<u64>, Vec<u64>)],
    layout: Layout,
) -> Vec<u8> {
    let flat_of = |offset: &[u64], shape: &[u64], k: u64| {
        let (mut rest, mut flat, mut stride) = (k, 0, 1);
        for d in (0..global.len()).rev() {
            flat += (offset[d] + rest % shape[d]) * stride;
            rest /= shape[d];
            stride *= global[d];
        }
        flat
    };
    let data: Vec<Vec<u8>> = blocks
        .iter()
        .map(|(o, s)| {
            let volume: u64 = s.iter().product();
            (0..volume)
                .flat_map(|k| element_bytes(dtype, flat_of(o, s, k)))
                .collect()
        })
        .collect();
    let tiles = blocks
        .iter()
        .zip(&data)
        .map(|((o, s), d)| LocalTile {
            tile: Tile::new(o.clone(), s.clone()),
            buf: host_bytes(d),
        })
        .collect();
    let options = WriteOptions {
        layout,
        keep_others: true,
        ..WriteOptions::default()
    };
    write_tiles(path, dataset, dtype, global, tiles, options).unwrap();
    let volume: u64 = global.iter().product();
    (0..volume).flat_map(|k| element_bytes(dtype, k)).collect()
}

/// The whole of `dataset` of `dtype` in `path` as bytes, read by h5tile.
fn read_bytes(path: &Path, dataset: &str, dtype: Dtype, global: &[u64]) -> Vec<u8> {
    let volume: u64 = global.iter().product();
    let mut out = vec![0u8; volume as usize * dtype.size()];
    let all = Tile::new(vec![0; global.len()], global.to_vec());
    read_into(path, dataset, dtype, &all, &mut out, ReadOptions::default()).unwrap();
    out
}

/// The text fields `a` and `b` of each object of the JSON array `list`.
fn text_pairs<'a>(list: &'a Value, a: &str, b: &str) -> Vec<(&'a str, &'a str)> {
    let text = |o: &'a Value, k: &str| o[k].as_str().unwrap();
    let objects = list.as_array().unwrap().iter();
    objects.map(|o| (text(o, a), text(o, b))).collect()
}

/// Raw HDF5 for what the library's wrappers do not make: groups, links, attributes on groups.
mod raw {
    use h5tile::internals::hdf5::cstr;
    use hdf5_sys::h5::hsize_t;
    use hdf5_sys::h5a::{H5Aclose, H5Acreate2, H5Aexists, H5Aopen, H5Aread, H5Awrite};
    use hdf5_sys::h5i::hid_t;
    use hdf5_sys::h5l::{H5L_info2_t, H5L_type_t, H5Lget_info2, H5Lget_val};
    use hdf5_sys::h5p::{H5P_CRT_ORDER_INDEXED, H5P_CRT_ORDER_TRACKED, H5P_DEFAULT};
    use hdf5_sys::h5s::{H5Sclose, H5Screate_simple};
    use hdf5_sys::h5t::H5T_NATIVE_UINT64;

    /// Writes attribute `name` of the object at `object` in file `file`: `values` as uint64.
    pub fn write_u64(file: hid_t, object: &str, name: &str, values: &[u64]) {
        unsafe {
            let o = hdf5_sys::h5o::H5Oopen(file, cstr(object).as_ptr(), H5P_DEFAULT);
            assert!(o >= 0, "open {object}");
            let dims = [values.len() as hsize_t];
            let space = H5Screate_simple(1, dims.as_ptr(), std::ptr::null());
            let t = *H5T_NATIVE_UINT64;
            let a = H5Acreate2(o, cstr(name).as_ptr(), t, space, H5P_DEFAULT, H5P_DEFAULT);
            assert!(a >= 0, "create attribute {name}");
            assert!(H5Awrite(a, t, values.as_ptr().cast()) >= 0);
            H5Aclose(a);
            H5Sclose(space);
            hdf5_sys::h5o::H5Oclose(o);
        }
    }

    /// Attribute `name` of the object at `object` as uint64 values (None: there is none).
    pub fn read_u64(file: hid_t, object: &str, name: &str, n: usize) -> Option<Vec<u64>> {
        unsafe {
            let o = hdf5_sys::h5o::H5Oopen(file, cstr(object).as_ptr(), H5P_DEFAULT);
            assert!(o >= 0, "open {object}");
            let c = cstr(name);
            let mut out = None;
            if H5Aexists(o, c.as_ptr()) > 0 {
                let a = H5Aopen(o, c.as_ptr(), H5P_DEFAULT);
                let mut values = vec![0u64; n];
                assert!(H5Aread(a, *H5T_NATIVE_UINT64, values.as_mut_ptr().cast()) >= 0);
                H5Aclose(a);
                out = Some(values);
            }
            hdf5_sys::h5o::H5Oclose(o);
            out
        }
    }

    /// Creates group `name`, tracking the creation order of its links.
    pub fn group_in_creation_order(file: hid_t, name: &str) {
        unsafe {
            let gcpl = hdf5_sys::h5p::H5Pcreate(*hdf5_sys::h5p::H5P_CLS_GROUP_CREATE);
            let order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
            hdf5_sys::h5p::H5Pset_link_creation_order(gcpl, order);
            let g = hdf5_sys::h5g::H5Gcreate2(
                file,
                cstr(name).as_ptr(),
                H5P_DEFAULT,
                gcpl,
                H5P_DEFAULT,
            );
            assert!(g >= 0, "create group {name}");
            hdf5_sys::h5g::H5Gclose(g);
            hdf5_sys::h5p::H5Pclose(gcpl);
        }
    }

    pub fn soft_link(file: hid_t, target: &str, name: &str) {
        let (t, n) = (cstr(target), cstr(name));
        let made = unsafe {
            hdf5_sys::h5l::H5Lcreate_soft(t.as_ptr(), file, n.as_ptr(), H5P_DEFAULT, H5P_DEFAULT)
        };
        assert!(made >= 0, "soft link {name}");
    }

    pub fn hard_link(file: hid_t, target: &str, name: &str) {
        let (t, n) = (cstr(target), cstr(name));
        let made = unsafe {
            hdf5_sys::h5l::H5Lcreate_hard(
                file,
                t.as_ptr(),
                file,
                n.as_ptr(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        assert!(made >= 0, "hard link {name}");
    }

    pub fn external_link(file: hid_t, other: &str, object: &str, name: &str) {
        let (f, o, n) = (cstr(other), cstr(object), cstr(name));
        let made = unsafe {
            hdf5_sys::h5l::H5Lcreate_external(
                f.as_ptr(),
                o.as_ptr(),
                file,
                n.as_ptr(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        assert!(made >= 0, "external link {name}");
    }

    /// The file `path` with the named datatype /T (float64) and what is of it: the datasets
    /// /Aearly (before /T in name order) and /d, with the attribute `a`, the root's attribute
    /// `g`, and the virtual dataset /v (all of /x in the file `source`, made here beside it)
    /// with the attribute `b`.
    pub fn named_type_file(path: &str, source: &str) {
        use hdf5_sys::h5d::{H5Dclose, H5Dcreate2, H5Dwrite};
        use hdf5_sys::h5f::{H5Fclose, H5Fcreate, H5F_ACC_TRUNC};
        use hdf5_sys::h5p::{H5Pclose, H5Pcreate, H5Pset_virtual, H5P_CLS_DATASET_CREATE};
        use hdf5_sys::h5s::{H5S_class_t, H5Screate, H5S_ALL};
        use hdf5_sys::h5t::{H5Tclose, H5Tcommit2, H5Tcopy, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
        const P: hid_t = H5P_DEFAULT;
        let values = [0.5f64, 1.5, 2.5, 3.5];
        unsafe {
            let (dims, double) = ([4 as hsize_t], *H5T_NATIVE_DOUBLE);
            let space = H5Screate_simple(1, dims.as_ptr(), std::ptr::null());
            let scalar = H5Screate(H5S_class_t::H5S_SCALAR);
            let write = |file: hid_t, name: &str, t: hid_t, dcpl: hid_t| {
                let d = H5Dcreate2(file, cstr(name).as_ptr(), t, space, P, dcpl, P);
                assert!(d >= 0, "create {name}");
                if dcpl == P {
                    assert!(H5Dwrite(d, double, H5S_ALL, H5S_ALL, P, values.as_ptr().cast()) >= 0);
                }
                H5Dclose(d);
            };
            let src = H5Fcreate(cstr(source).as_ptr(), H5F_ACC_TRUNC, P, P);
            write(src, "/x", *H5T_IEEE_F64LE, P);
            H5Fclose(src);

            let f = H5Fcreate(cstr(path).as_ptr(), H5F_ACC_TRUNC, P, P);
            let t = H5Tcopy(*H5T_IEEE_F64LE);
            assert!(H5Tcommit2(f, cstr("/T").as_ptr(), t, P, P, P) >= 0);
            write(f, "/Aearly", t, P);
            write(f, "/d", t, P);
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            let (file, x) = (cstr(source), cstr("/x"));
            assert!(H5Pset_virtual(dcpl, space, file.as_ptr(), x.as_ptr(), space) >= 0);
            write(f, "/v", t, dcpl);
            H5Pclose(dcpl);
            for (object, name) in [("/d", "a"), ("/", "g"), ("/v", "b")] {
                let o = hdf5_sys::h5o::H5Oopen(f, cstr(object).as_ptr(), P);
                let a = H5Acreate2(o, cstr(name).as_ptr(), t, scalar, P, P);
                assert!(a >= 0, "create attribute {name} of {object}");
                assert!(H5Awrite(a, double, values.as_ptr().cast()) >= 0);
                H5Aclose(a);
                hdf5_sys::h5o::H5Oclose(o);
            }
            H5Tclose(t);
            H5Sclose(space);
            H5Sclose(scalar);
            H5Fclose(f);
        }
    }

    /// The named datatypes of the file `file` (their paths); for each of `uses` (a dataset,
    /// "/d", or an attribute, "/d@a"), the path of the named datatype its type is ("" for one
    /// that no link names), None for a type of its own; and how many refer to the first named
    /// datatype.
    pub fn named_types(file: hid_t, uses: &[&str]) -> (Vec<String>, Vec<Option<String>>, u32) {
        use hdf5_sys::h5::{herr_t, H5_index_t, H5_iter_order_t};
        use hdf5_sys::h5o::{H5O_info2_t, H5O_token_t, H5O_type_t, H5O_INFO_BASIC};
        type Found = Vec<(String, [u8; 16])>;
        extern "C" fn collect(
            _obj: hid_t,
            name: *const std::ffi::c_char,
            info: *const H5O_info2_t,
            data: *mut std::ffi::c_void,
        ) -> herr_t {
            let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
            if info.type_ == H5O_type_t::H5O_TYPE_NAMED_DATATYPE {
                let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
                found.push((format!("/{name}"), unsafe {
                    std::mem::transmute::<H5O_token_t, [u8; 16]>(info.token)
                }));
            }
            0
        }
        let info = |id: hid_t| unsafe {
            let mut info: H5O_info2_t = std::mem::zeroed();
            assert!(hdf5_sys::h5o::H5Oget_info3(id, &mut info, H5O_INFO_BASIC) >= 0);
            info
        };
        let mut named: Found = Vec::new();
        let visited = unsafe {
            hdf5_sys::h5o::H5Ovisit3(
                file,
                H5_index_t::H5_INDEX_NAME,
                H5_iter_order_t::H5_ITER_INC,
                Some(collect),
                &mut named as *mut Found as *mut std::ffi::c_void,
                H5O_INFO_BASIC,
            )
        };
        assert!(visited >= 0);
        let of = uses
            .iter()
            .map(|used| unsafe {
                let t = match used.split_once('@') {
                    Some((object, name)) => {
                        let (o, n) = (cstr(object), cstr(name));
                        let a = hdf5_sys::h5a::H5Aopen_by_name(
                            file,
                            o.as_ptr(),
                            n.as_ptr(),
                            H5P_DEFAULT,
                            H5P_DEFAULT,
                        );
                        assert!(a >= 0, "{used}");
                        let t = hdf5_sys::h5a::H5Aget_type(a);
                        H5Aclose(a);
                        t
                    }
                    None => {
                        let d = hdf5_sys::h5d::H5Dopen2(file, cstr(used).as_ptr(), H5P_DEFAULT);
                        assert!(d >= 0, "{used}");
                        let t = hdf5_sys::h5d::H5Dget_type(d);
                        hdf5_sys::h5d::H5Dclose(d);
                        t
                    }
                };
                let token: Option<[u8; 16]> = match hdf5_sys::h5t::H5Tcommitted(t) > 0 {
                    true => Some(std::mem::transmute::<H5O_token_t, [u8; 16]>(info(t).token)),
                    false => None,
                };
                hdf5_sys::h5t::H5Tclose(t);
                token.map(|token| {
                    let name = named.iter().find(|(_, k)| *k == token);
                    name.map_or(String::new(), |(n, _)| n.clone())
                })
            })
            .collect();
        let rc = named.first().map_or(0, |(n, _)| unsafe {
            let o = hdf5_sys::h5o::H5Oopen(file, cstr(n).as_ptr(), H5P_DEFAULT);
            let rc = info(o).rc;
            hdf5_sys::h5o::H5Oclose(o);
            rc
        });
        (named.into_iter().map(|(n, _)| n).collect(), of, rc)
    }

    /// The kind of link `name` ("hard", "soft", "external") and, for a soft link, its target.
    pub fn link(file: hid_t, name: &str) -> (&'static str, String) {
        let n = cstr(name);
        let mut info: H5L_info2_t = Default::default();
        assert!(unsafe { H5Lget_info2(file, n.as_ptr(), &mut info, H5P_DEFAULT) } >= 0);
        match info.type_ {
            H5L_type_t::H5L_TYPE_HARD => ("hard", String::new()),
            H5L_type_t::H5L_TYPE_SOFT => {
                let size = unsafe { *info.u.val_size() };
                let mut buf = vec![0u8; size];
                let got = unsafe {
                    H5Lget_val(file, n.as_ptr(), buf.as_mut_ptr().cast(), size, H5P_DEFAULT)
                };
                assert!(got >= 0);
                let text = std::ffi::CStr::from_bytes_until_nul(&buf).unwrap();
                ("soft", text.to_string_lossy().into_owned())
            }
            H5L_type_t::H5L_TYPE_EXTERNAL => ("external", String::new()),
            _ => ("other", String::new()),
        }
    }
}

/// Beside the datasets of `master`: a group in link creation order holding a chunked dataset
/// and a hard link to `/g`, attributes on the root, the group, that dataset and `/g`, a soft
/// link and an external link.
fn add_other_objects(master: &Path) {
    let _l = hdf5::lock();
    let f = File::open_write(master).unwrap();
    let id = f.id();
    raw::write_u64(id, "/", "run", &[42, 7]);
    raw::group_in_creation_order(id, "/grp");
    raw::write_u64(id, "/grp", "step", &[100]);
    let t = Dtype::Int32.hdf5_type().unwrap();
    let dcpl = Plist::dataset_create().unwrap();
    let chunk = [2u64, 5];
    assert!(unsafe { hdf5_sys::h5p::H5Pset_chunk(dcpl.id(), 2, chunk.as_ptr()) } >= 0);
    let plain = Dataset::create(
        &f,
        "/grp/zplain",
        &t,
        &Space::simple(&[6, 5]).unwrap(),
        &dcpl,
    )
    .unwrap();
    let values: Vec<i32> = (0..30).map(|k| 1000 - k).collect();
    plain.write_buffer(&t, host_bytes(&values)).unwrap();
    plain.write_u64_attribute("scale", &[1], &[3]).unwrap();
    drop(plain);
    raw::hard_link(id, "/g", "/grp/again");
    raw::soft_link(id, "/grp/zplain", "/grp/soft");
    raw::external_link(id, "elsewhere.h5", "/x", "/ext");
    let g = Dataset::open(&f, "/g").unwrap();
    g.write_u64_attribute("units", &[2], &[9, 8]).unwrap();
    drop(g);
    f.close().unwrap();
}

#[test]
fn pack_makes_virtual_datasets_contiguous_and_keeps_everything_else() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("run/grid.h5");
    std::fs::create_dir(d.path().join("run")).unwrap();
    write_grid(&m, "/g", Layout::Vds, false);
    write_grid(&m, "/h", Layout::Subfiles, true);
    add_other_objects(&m);
    let before = snapshot(&d.path().join("run"));
    let out_dir = d.path().join("archive");
    std::fs::create_dir(&out_dir).unwrap();

    let doc = run_json(&["pack", s(&m), s(&out_dir)], 0);
    let dst = out_dir.join("grid.h5");
    assert_eq!(doc["destination"], s(&dst));
    assert_eq!(snapshot(&d.path().join("run")), before, "SRC is untouched");
    assert_eq!(
        std::fs::read_dir(&out_dir).unwrap().count(),
        1,
        "one file, no tile folder, no temporary file"
    );
    let packed = doc["packed"].as_array().unwrap();
    let names: Vec<&str> = packed.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["/g", "/h"]);
    for p in packed {
        assert_eq!(p["bytes"], 240);
        assert_eq!(p["shape"], serde_json::json!([6, 5]));
        assert_eq!(p["read_by"], "h5tile");
        assert_eq!(p["checksums_verified"], true);
        assert_eq!(p["slabs"], 1);
    }
    let copied = text_pairs(&doc["copied"], "name", "kind");
    assert_eq!(copied, [("/grp", "group"), ("/grp/zplain", "dataset")]);
    let links: Vec<(&str, &str, &str)> = doc["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let f = |k: &str| l[k].as_str().unwrap();
            (f("name"), f("kind"), f("target"))
        })
        .collect();
    assert_eq!(
        links,
        [
            ("/ext", "external", "elsewhere.h5:/x"),
            ("/grp/again", "hard", "/g"),
            ("/grp/soft", "soft", "/grp/zplain"),
        ]
    );

    // The source's tiles gone, the packed file reads on its own.
    std::fs::rename(d.path().join("run"), d.path().join("gone")).unwrap();
    assert_eq!(read_grid(&dst, "/g"), expected_grid());
    assert_eq!(read_grid(&dst, "/h"), expected_grid());
    assert_eq!(read_grid(&dst, "/grp/again"), expected_grid());
    let listing = run_json(&["ls", s(&dst)], 0);
    let storage = text_pairs(&listing["datasets"], "name", "storage");
    // "/grp/again" is "/g" under another name: listed once.
    assert_eq!(
        storage,
        [
            ("/g", "contiguous"),
            ("/grp/zplain", "chunked"),
            ("/h", "contiguous")
        ]
    );
    run(&["check", s(&dst)], 0);
    let plain = read_bytes(&dst, "/grp/zplain", Dtype::Int32, &[6, 5]);
    let want: Vec<u8> = (0..30)
        .flat_map(|k: i32| (1000 - k).to_ne_bytes())
        .collect();
    assert_eq!(plain, want);

    let _l = hdf5::lock();
    let f = File::open_read(&dst).unwrap();
    let id = f.id();
    assert_eq!(raw::read_u64(id, "/", "run", 2), Some(vec![42, 7]));
    assert_eq!(raw::read_u64(id, "/grp", "step", 1), Some(vec![100]));
    assert_eq!(raw::read_u64(id, "/grp/zplain", "scale", 1), Some(vec![3]));
    assert_eq!(raw::read_u64(id, "/g", "units", 2), Some(vec![9, 8]));
    for own in ["h5tile_checksums", "h5tile_tile_bytes", "h5tile_tile_min"] {
        assert_eq!(raw::read_u64(id, "/g", own, 1), None, "{own} is left out");
    }
    assert_eq!(
        raw::link(id, "/grp/soft"),
        ("soft", "/grp/zplain".to_string())
    );
    assert_eq!(raw::link(id, "/ext").0, "external");
    assert_eq!(raw::link(id, "/grp/again").0, "hard");
}

#[test]
fn pack_keeps_every_element_type_of_both_layouts_byte_for_byte() {
    let blocks: Vec<(Vec<u64>, Vec<u64>)> = GRID_TILES
        .iter()
        .map(|&(r, c, h, w)| (vec![r, c], vec![h, w]))
        .collect();
    let d = tempfile::tempdir().unwrap();
    let dtypes = [
        Dtype::Bool,
        Dtype::UInt8,
        Dtype::Int16,
        Dtype::Float16,
        Dtype::Float32,
        Dtype::Int64,
        Dtype::Complex64,
        Dtype::Complex128,
    ];
    for layout in [Layout::Vds, Layout::Subfiles] {
        let m = d.path().join(format!("{layout:?}.h5"));
        let mut expected = Vec::new();
        for dtype in dtypes {
            let name = format!("/{}", dtype.name());
            expected.push(write_blocks(&m, &name, dtype, &[6, 5], &blocks, layout));
        }
        let dst = d.path().join(format!("{layout:?}-packed.h5"));
        let doc = run_json(&["pack", s(&m), s(&dst)], 0);
        assert_eq!(doc["packed"].as_array().unwrap().len(), dtypes.len());
        for (dtype, want) in dtypes.iter().zip(&expected) {
            let name = format!("/{}", dtype.name());
            assert_eq!(
                &read_bytes(&dst, &name, *dtype, &[6, 5]),
                want,
                "{layout:?} {name}"
            );
            let g = &run_json(&["ls", s(&dst), &name], 0)["datasets"][0];
            assert_eq!(g["storage"], "contiguous", "{layout:?} {name}");
            assert_eq!(g["dtype"], dtype.name(), "{layout:?} {name}");
        }
    }
}

#[test]
fn pack_stitches_slabs_smaller_than_a_row_or_a_plane() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("cube.h5");
    let global = [4u64, 6, 5];
    let blocks: Vec<(Vec<u64>, Vec<u64>)> = vec![
        (vec![0, 0, 0], vec![4, 3, 2]),
        (vec![0, 0, 2], vec![4, 3, 3]),
        (vec![0, 3, 0], vec![4, 3, 5]),
    ];
    let want = write_blocks(&m, "/c", Dtype::Float64, &global, &blocks, Layout::Vds);
    write_grid(&m, "/g", Layout::Subfiles, true);
    // (bound, slabs of /c, slabs of /g): a plane of /c is 240 B, a row 40 B, a row of /g 40 B.
    for (bound, c, g) in [(16, 72, 18), (100, 12, 3), (500, 2, 1), (1, 120, 30)] {
        let dst = d.path().join(format!("cube-{bound}.h5"));
        let bound = bound.to_string();
        let doc = run_json(&["pack", "--slab-bytes", &bound, s(&m), s(&dst)], 0);
        let slabs: Vec<u64> = doc["packed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["slabs"].as_u64().unwrap())
            .collect();
        assert_eq!(slabs, [c, g], "bound {bound}");
        assert_eq!(read_bytes(&dst, "/c", Dtype::Float64, &global), want);
        assert_eq!(read_grid(&dst, "/g"), expected_grid());
    }
}

#[test]
fn pack_of_a_damaged_or_incomplete_file_fails_and_leaves_nothing() {
    for layout in [Layout::Vds, Layout::Subfiles] {
        let (d, m) = grid_in_new_folder("grid.h5", layout);
        let (file, start, end) = flip_bit(&m, 1, 3);
        let dst = d.path().join("packed.h5");
        let (out, err) = run(&["pack", "--slab-bytes", "80", s(&m), s(&dst)], 1);
        assert!(out.is_empty(), "{out}");
        assert!(
            err.starts_with(&format!(
                "h5tile: cannot pack '{}' into '{}': ",
                s(&m),
                s(&dst)
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("'{}'", s(&file))),
            "{layout:?}: {err}"
        );
        assert!(err.contains(&format!("bytes {start}..{end}")), "{err}");
        assert!(!dst.exists(), "no DST");
        assert!(hidden_files(d.path()).is_empty(), "no temporary file");
    }
    // A tile file missing: found before anything is written.
    let (d, m) = grid_in_new_folder("grid.h5", Layout::Vds);
    let gone = tile_files(&m)[2].clone();
    std::fs::remove_file(&gone).unwrap();
    let dst = d.path().join("packed.h5");
    let (_, err) = run(&["pack", s(&m), s(&dst)], 1);
    assert!(
        err.contains(&format!("tile file '{}'", s(&gone))) && err.contains("does not exist"),
        "{err}"
    );
    assert!(!dst.exists() && hidden_files(d.path()).is_empty());
}

#[test]
fn pack_keeps_a_named_datatype_once_and_all_that_was_of_it_of_it() {
    let d = tempfile::tempdir().unwrap();
    let (src, dst) = (d.path().join("named.h5"), d.path().join("packed.h5"));
    let source = d.path().join("x.h5");
    let uses = ["/Aearly", "/d", "/d@a", "/@g", "/v", "/v@b"];
    let all_of_t = (
        vec!["/T".to_string()],
        vec![Some("/T".to_string()); uses.len()],
        1 + uses.len() as u32,
    );
    {
        let _l = hdf5::lock();
        raw::named_type_file(s(&src), s(&source));
        let f = File::open_read(&src).unwrap();
        assert_eq!(raw::named_types(f.id(), &uses), all_of_t, "the source");
    }
    let doc = run_json(&["pack", s(&src), s(&dst)], 0);
    let packed: Vec<&str> = doc["packed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(packed, ["/v"]);
    let copied = text_pairs(&doc["copied"], "name", "kind");
    assert_eq!(
        copied,
        [
            ("/Aearly", "dataset"),
            ("/T", "named datatype"),
            ("/d", "dataset")
        ]
    );
    let _l = hdf5::lock();
    let f = File::open_read(&dst).unwrap();
    // /T once (and no other object: the temporary group the copies were made in is gone),
    // and every dataset and attribute of it.
    assert_eq!(raw::named_types(f.id(), &uses), all_of_t, "the packed file");
    let listing: Vec<String> = f.links("/").unwrap().into_iter().map(|l| l.path).collect();
    assert_eq!(listing, ["/Aearly", "/T", "/d", "/v"]);
    drop(f);
    for name in ["/Aearly", "/d", "/v"] {
        let got = read_bytes(&dst, name, Dtype::Float64, &[4]);
        let want: Vec<u8> = [0.5f64, 1.5, 2.5, 3.5]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn pack_refuses_an_existing_dst_without_force_and_replaces_it_with_it() {
    let (d, a, b) = grids_a_and_b([Layout::Vds, Layout::Vds]);
    let old_tiles = tile_files(&b);
    let before = snapshot(d.path());
    let (_, err) = run(&["pack", s(&a), s(&b)], 2);
    assert_eq!(
        err,
        format!(
            "h5tile: cannot pack to '{}': it exists (--force replaces it)\n",
            s(&b)
        )
    );
    assert_eq!(snapshot(d.path()), before, "nothing changed");
    let (_, err) = run(&["pack", "--force", s(&a), s(&a)], 2);
    assert!(err.contains("itself"), "{err}");
    let (_, err) = run(&["pack", s(&a), s(&d.path().join("no/such/dir/x.h5"))], 2);
    assert!(err.contains("does not exist"), "{err}");
    let missing = d.path().join("missing.h5");
    let (_, err) = run(&["pack", s(&missing), s(&d.path().join("x.h5"))], 2);
    assert_eq!(
        err,
        format!("h5tile: cannot open '{}': no such file\n", s(&missing))
    );

    let (out, _) = run(&["pack", "--force", s(&a), s(&b)], 0);
    assert!(
        out.starts_with(&format!(
            "packed '{}' into '{}' (240 B): 1 virtual",
            s(&a),
            s(&b)
        )),
        "{out}"
    );
    assert!(out.contains("checksums verified"), "{out}");
    assert_eq!(read_grid(&b, "/g"), expected_grid());
    assert!(
        old_tiles.iter().all(|t| !t.exists()),
        "the replaced master's tiles are gone"
    );
    assert!(!h5tile::internals::tool::tile_dir(&b).exists());
    assert_eq!(read_grid(&a, "/g"), expected_grid(), "SRC reads as before");
}

#[test]
fn pack_help_reads_like_a_manual_page() {
    let (out, _) = run(&["pack", "--help"], 0);
    for part in [
        "Exit status",
        "Example",
        "--json",
        "--force",
        "External links are kept",
        "contiguous",
        "--compression",
        "--no-shuffle",
        "Compressed tiles stay compressed",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    assert!(!out.contains("slab-bytes"), "a test-only option is hidden");
    let (out, _) = run(&["--help"], 0);
    assert!(out.contains("pack"), "{out}");
}
