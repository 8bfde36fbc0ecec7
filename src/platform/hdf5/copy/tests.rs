//! A file's objects copied as `pack` copies them.

use super::*;
use crate::platform::hdf5::{Attributes, Space};

#[test]
fn links_groups_attributes_and_a_contiguous_stand_in_are_copied() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.h5"), d.path().join("b.h5"));
    let src = File::create(&a).unwrap();
    let t = crate::dtype::Dtype::Int32.hdf5_type().unwrap();
    let dcpl = Plist::dataset_create().unwrap();
    let x = Dataset::create(&src, "/g/x", &t, &Space::simple(&[4, 3]).unwrap(), &dcpl).unwrap();
    x.write_u64_attribute("keep", &[1], &[7]).unwrap();
    x.write_u64_attribute("h5tile_drop", &[1], &[8]).unwrap();
    let values: Vec<i32> = (0..12).collect();
    x.write_buffer(&t, crate::platform::device::host_bytes(&values))
        .unwrap();
    drop(x);
    let hard = Link {
        path: "/g/y".into(),
        target: LinkTarget::Object(ObjectKind::Dataset, ObjectKey([0; 16])),
        utf8: false,
    };
    src.make_link(&hard, Some("/g/x")).unwrap();
    let soft = Link {
        path: "/s".into(),
        target: LinkTarget::Soft("/g/x".into()),
        utf8: true,
    };
    src.make_link(&soft, None).unwrap();
    let external = Link {
        path: "/e".into(),
        target: LinkTarget::External {
            file: "other.h5".into(),
            object: "/z".into(),
        },
        utf8: false,
    };
    src.make_link(&external, None).unwrap();

    let root = src.links("/").unwrap();
    let paths: Vec<&str> = root.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(paths, ["/e", "/g", "/s"]);
    assert_eq!(root[0].target, external.target);
    assert_eq!(root[2].target, soft.target);
    assert!(root[2].utf8);
    let g = src.links("/g").unwrap();
    assert_eq!(g[0].target, g[1].target, "two hard links to one object");
    assert!(matches!(
        g[0].target,
        LinkTarget::Object(ObjectKind::Dataset, _)
    ));

    let dst = File::create_for_copy(&b, &src).unwrap();
    dst.create_group_like(&root[1], &src).unwrap();
    let x = Dataset::open(&src, "/g/x").unwrap();
    let types = NamedTypes::default();
    let out = dst.create_packed_like(&g[0], &x, &types, None).unwrap();
    let skipped = src
        .copy_attributes("/g/x", &dst, &|n| !n.starts_with("h5tile_"), &types)
        .unwrap();
    assert!(skipped.is_empty());
    let first: Vec<u8> = values[..6].iter().flat_map(|v| v.to_ne_bytes()).collect();
    out.write_block(&t, &[0, 0], &[2, 3], &first).unwrap();
    x.copy_block_to(&out, &[2, 0], &[2, 3], &mut Vec::new())
        .unwrap();
    dst.make_link(&g[1], Some("/g/x")).unwrap();
    dst.make_link(&root[2], None).unwrap();
    drop((out, x));
    dst.close().unwrap();

    let dst = File::open_read(&b).unwrap();
    let y = Dataset::open(&dst, "/s").unwrap();
    assert_eq!(
        y.storage().unwrap(),
        super::super::Storage::Contiguous(y.data_offset())
    );
    let mut back = vec![0i32; 12];
    y.read_into(
        &t,
        &Space::simple(&[4, 3]).unwrap(),
        &y.space().unwrap(),
        crate::platform::device::bytes_mut(&mut back),
    )
    .unwrap();
    assert_eq!(back, values);
    assert_eq!(y.u64_attribute("keep"), Some((vec![1], vec![7])));
    assert_eq!(y.u64_attribute("h5tile_drop"), None);
    assert_eq!(
        dst.links("/g").unwrap()[0].target,
        dst.links("/g").unwrap()[1].target
    );
}
