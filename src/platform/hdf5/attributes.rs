//! Attributes a user stores with a checkpoint, on the file, a group or a dataset: numbers as
//! a scalar (one value) or a one-dimensional array of one of the 14 element types, text as a scalar variable-length
//! UTF-8 string (what h5py writes for a `str`, and reads back as one). And, for listings
//! (`h5tile ls`), any object's attributes of any type, each as a short text
//! (`File::listed_attributes`).

use super::handle::Object;
use super::{check, cstr, lock, File, Handle, Plist, Space, Type};
use crate::dtype::Dtype;
use crate::status::*;
use hdf5_sys::h5a::*;
use hdf5_sys::h5g::H5Gcreate2;
use hdf5_sys::h5o::H5Oopen;
use hdf5_sys::h5p::{H5P_CLS_LINK_CREATE, H5P_DEFAULT};
use hdf5_sys::h5t::*;
use std::ffi::c_void;
#[cfg(any(test, feature = "internals"))]
use {
    hdf5_sys::h5::{herr_t, H5_index_t, H5_iter_order_t},
    hdf5_sys::h5i::hid_t,
    std::ffi::{c_char, CStr, CString},
};

/// What an attribute holds.
#[derive(Clone, Debug, PartialEq)]
pub enum AttributeValue {
    /// `bytes.len() / dtype.size()` elements of `dtype`, in native order.
    Numbers {
        dtype: Dtype,
        bytes: Vec<u8>,
    },
    Text(String),
}

impl File {
    /// Removes attribute `name` of `object` (a group or dataset path).
    #[cfg(any(test, feature = "internals"))]
    pub fn delete_attribute(&self, object: &str, name: &str) -> Result<()> {
        let _l = lock();
        let (o, n) = (cstr(object), cstr(name));
        let id = unsafe { H5Adelete_by_name(self.id(), o.as_ptr(), n.as_ptr(), H5P_DEFAULT) };
        check(id, || {
            format!("cannot delete attribute '{name}' of '{object}'")
        })
        .map(|_| ())
    }

    /// Sets attribute `name` of `object` ("/" for the file, or a group or dataset path) to
    /// `value`, replacing one of that name; a missing group on the path is created.
    pub fn set_attribute(&self, object: &str, name: &str, value: &AttributeValue) -> Result<()> {
        let _l = lock();
        let what = || format!("cannot set attribute '{name}' of '{object}'");
        let target = self
            .object_or_new_group(object)
            .map_err(|e| e.context(&what()))?;
        let c = cstr(name);
        if unsafe { H5Aexists(target.id(), c.as_ptr()) } > 0 {
            check(unsafe { H5Adelete(target.id(), c.as_ptr()) }, what)?;
        }
        let (dtype, space, text);
        let data: *const c_void = match value {
            AttributeValue::Numbers { dtype: d, bytes } => {
                dtype = d.hdf5_type()?;
                // One value is a scalar, as h5py stores `attrs["step"] = 100`.
                space = match bytes.len() / d.size() {
                    1 => Space::scalar()?,
                    n => Space::simple(&[n as u64])?,
                };
                bytes.as_ptr().cast()
            }
            AttributeValue::Text(s) => {
                dtype = utf8_string()?;
                space = Space::scalar()?;
                text = [cstr(s)];
                text.as_ptr().cast()
            }
        };
        let id = unsafe {
            H5Acreate2(
                target.id(),
                c.as_ptr(),
                dtype.id(),
                space.id(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        let attr = super::Attribute::from_id(id, what)?;
        check(unsafe { H5Awrite(attr.id(), dtype.id(), data) }, what).map(|_| ())
    }

    /// Attribute `name` of `object` as `count` elements of `dtype` (HDF5 converting them), or
    /// `NOT_FOUND` (no such object or attribute), `DTYPE` (text, or a type that does not
    /// convert), `SHAPE` (it holds another number of elements).
    pub fn attribute_values(
        &self,
        object: &str,
        name: &str,
        dtype: Dtype,
        count: usize,
    ) -> Result<Vec<u8>> {
        let _l = lock();
        let path = self.name();
        let Some(_) = self.object_kind(object)? else {
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("no object '{object}' in '{path}'"),
            );
        };
        let target = self.open_object(object)?;
        let c = cstr(name);
        if unsafe { H5Aexists(target.id(), c.as_ptr()) } <= 0 {
            super::take_error_stack();
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("no attribute '{name}' on '{object}' in '{path}'"),
            );
        }
        let what = || format!("cannot read attribute '{name}' of '{object}' in '{path}'");
        let attr = super::Attribute::from_id(
            unsafe { H5Aopen(target.id(), c.as_ptr(), H5P_DEFAULT) },
            what,
        )?;
        let stored = Type::from_id(unsafe { H5Aget_type(attr.id()) }, what)?;
        let mem = dtype.hdf5_type()?;
        if stored.class() == H5T_class_t::H5T_STRING || !stored.converts_to(&mem) {
            return fail(
                H5TILE_ERR_DTYPE,
                format!(
                    "attribute '{name}' of '{object}' in '{path}' cannot be read as {}",
                    dtype.name()
                ),
            );
        }
        let space = Space::from_id(unsafe { H5Aget_space(attr.id()) }, what)?;
        let held = space.points()?;
        if held != count as u64 {
            return fail(
                H5TILE_ERR_SHAPE,
                format!(
                    "attribute '{name}' of '{object}' in '{path}' holds {held} values, not {count}"
                ),
            );
        }
        let mut bytes = vec![0u8; count * dtype.size()];
        check(
            unsafe { H5Aread(attr.id(), mem.id(), bytes.as_mut_ptr().cast()) },
            what,
        )?;
        Ok(bytes)
    }

    fn open_object(&self, object: &str) -> Result<Object> {
        let c = cstr(object);
        Object::from_id(
            unsafe { H5Oopen(self.id(), c.as_ptr(), H5P_DEFAULT) },
            || format!("cannot open '{object}'"),
        )
    }

    /// `object`, opened; a group made (with its parents) when nothing has its path.
    fn object_or_new_group(&self, object: &str) -> Result<Object> {
        if object == "/" || self.object_kind(object)?.is_some() {
            return self.open_object(object);
        }
        // A parent that is not a group makes HDF5 fail, naming it.
        let lcpl = Plist::create(*H5P_CLS_LINK_CREATE)?;
        check(
            unsafe { hdf5_sys::h5p::H5Pset_create_intermediate_group(lcpl.id(), 1) },
            || "cannot set intermediate group creation".into(),
        )?;
        let c = cstr(object);
        let id = unsafe { H5Gcreate2(self.id(), c.as_ptr(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT) };
        Object::from_id(id, || format!("cannot create group '{object}'"))
    }
}

/// The variable-length UTF-8 string type h5py gives a `str` attribute.
fn utf8_string() -> Result<Type> {
    let t = Type::copy(*H5T_C_S1)?;
    let what = || "cannot make a string type".to_string();
    check(unsafe { H5Tset_size(t.id(), H5T_VARIABLE) }, what)?;
    check(
        unsafe { H5Tset_cset(t.id(), H5T_cset_t::H5T_CSET_UTF8) },
        what,
    )?;
    Ok(t)
}

/// The text of a variable-length string attribute, for tests.
#[cfg(test)]
pub(crate) fn read_text(file: &File, object: &str, name: &str) -> Result<String> {
    let _l = lock();
    let target = file.open_object(object)?;
    let c = cstr(name);
    let what = || format!("cannot read attribute '{name}'");
    let attr = super::Attribute::from_id(
        unsafe { H5Aopen(target.id(), c.as_ptr(), H5P_DEFAULT) },
        what,
    )?;
    let t = utf8_string()?;
    let mut p: *mut std::ffi::c_char = std::ptr::null_mut();
    check(
        unsafe {
            H5Aread(
                attr.id(),
                t.id(),
                (&mut p as *mut *mut std::ffi::c_char).cast(),
            )
        },
        what,
    )?;
    let s = unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned();
    unsafe { hdf5_sys::h5::H5free_memory(p.cast()) };
    Ok(s)
}

/// Most elements of an array attribute a listing shows one by one; a larger one is shown as
/// its type and extents.
#[cfg(any(test, feature = "internals"))]
const LISTED_ELEMENTS: u64 = 8;

/// Most characters of a text a listing shows; a longer one is cut, "…" marking the cut.
#[cfg(any(test, feature = "internals"))]
const LISTED_CHARS: usize = 80;

/// An attribute's value as a listing shows it (`File::listed_attributes`); its `Display` is
/// the short text `h5tile ls` prints.
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Debug, PartialEq)]
pub enum ListedValue {
    /// Integers, floats or bools: one (a scalar) or, `array`, a one-dimensional array of at
    /// most `LISTED_ELEMENTS`.
    Numbers {
        values: Vec<ListedNumber>,
        array: bool,
    },
    /// Strings (fixed- or variable-length, read as UTF-8, bytes that are not replaced), alike.
    Texts { values: Vec<String>, array: bool },
    /// Anything else, as its type and extents: "int64[1000]", "compound", "reference[2]",
    /// "float64 (empty)".
    Other(String),
    /// It could not be read: why.
    Unreadable(String),
}

/// One number of an attribute, in the width it is stored in (a float32 is shown as the
/// shortest text that reads back as that float32).
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ListedNumber {
    Int(i64),
    UInt(u64),
    Float32(f32),
    Float64(f64),
    Bool(bool),
}

#[cfg(any(test, feature = "internals"))]
impl std::fmt::Display for ListedNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Floats as Rust's `Debug` writes them: the shortest text that reads back as the same
        // value, "1.0" (not "1") and "1e-300" (not three hundred digits).
        match self {
            ListedNumber::Int(v) => write!(f, "{v}"),
            ListedNumber::UInt(v) => write!(f, "{v}"),
            ListedNumber::Float32(v) => write!(f, "{v:?}"),
            ListedNumber::Float64(v) => write!(f, "{v:?}"),
            ListedNumber::Bool(v) => write!(f, "{v}"),
        }
    }
}

#[cfg(any(test, feature = "internals"))]
impl std::fmt::Display for ListedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn list<T>(f: &mut std::fmt::Formatter<'_>, values: &[T], array: bool) -> std::fmt::Result
        where
            T: std::fmt::Display,
        {
            let parts: Vec<String> = values.iter().map(ToString::to_string).collect();
            match array {
                true => write!(f, "[{}]", parts.join(", ")),
                false => write!(f, "{}", parts.join(", ")),
            }
        }
        match self {
            ListedValue::Numbers { values, array } => list(f, values, *array),
            ListedValue::Texts { values, array } => {
                let quoted: Vec<String> = values.iter().map(|s| quoted(s)).collect();
                list(f, &quoted, *array)
            }
            ListedValue::Other(summary) => write!(f, "{summary}"),
            ListedValue::Unreadable(why) => write!(f, "<unreadable: {why}>"),
        }
    }
}

/// `text` in double quotes, quotes, backslashes and control characters escaped as Rust writes
/// them ("a\"b\n"), cut after `LISTED_CHARS` characters ("…" before the closing quote).
#[cfg(any(test, feature = "internals"))]
fn quoted(text: &str) -> String {
    let shown: String = text.chars().take(LISTED_CHARS).collect();
    let escaped = format!("{shown:?}");
    match shown.len() < text.len() {
        true => format!("{}…\"", &escaped[..escaped.len() - 1]),
        false => escaped,
    }
}

#[cfg(any(test, feature = "internals"))]
impl File {
    /// The attributes of `object` ("/" for the file, or a group or dataset path) whose names
    /// `wanted` takes, in name order, each with its value as a listing shows it (the others
    /// are not opened: h5tile's records of a large dataset's tiles are megabytes). They are
    /// read by the object's name, the object not opened (opening a virtual dataset decodes all
    /// its mappings). One that cannot be read is `Unreadable`; the error is only for a list
    /// that cannot be had.
    pub fn listed_attributes(
        &self,
        object: &str,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<(String, ListedValue)>> {
        let _l = lock();
        let o = cstr(object);
        let names = attribute_names_of(self.id(), &o)
            .map_err(|e| e.context(&format!("cannot list the attributes of '{object}'")))?;
        Ok(names
            .iter()
            .map(|name| (name, name.to_string_lossy().into_owned()))
            .filter(|(_, shown)| wanted(shown))
            .map(|(name, shown)| {
                let value = listed_value(self.id(), &o, name)
                    .unwrap_or_else(|e| ListedValue::Unreadable(e.message));
                (shown, value)
            })
            .collect())
    }
}

/// The names of the attributes of the object `object` names at `loc`, in name order.
#[cfg(any(test, feature = "internals"))]
fn attribute_names_of(loc: hid_t, object: &CStr) -> Result<Vec<CString>> {
    extern "C" fn collect(
        _loc: hid_t,
        attribute: *const c_char,
        _info: *const H5A_info_t,
        data: *mut c_void,
    ) -> herr_t {
        // SAFETY: HDF5 passes the attribute's name, a C string valid during the call, and our
        // `data`: the vector below, borrowed by no one else while HDF5 iterates.
        let (name, names) =
            unsafe { (CStr::from_ptr(attribute), &mut *(data as *mut Vec<CString>)) };
        names.push(name.to_owned());
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: `object` is a C string; `collect` matches HDF5's operator type and is given
    // `names` (alive until the call returns); no index is asked back (null).
    let iterated = unsafe {
        H5Aiterate_by_name(
            loc,
            object.as_ptr(),
            H5_index_t::H5_INDEX_NAME,
            H5_iter_order_t::H5_ITER_NATIVE,
            std::ptr::null_mut(),
            Some(collect),
            &mut names as *mut Vec<CString> as *mut c_void,
            H5P_DEFAULT,
        )
    };
    check(iterated, || "cannot iterate over them".into())?;
    // In increasing order HDF5 would first copy every attribute (values too) of a large
    // header into a table to sort it; sorted here, as it sorts them (strcmp).
    names.sort();
    Ok(names)
}

/// Attribute `name` of the object `object` names at `loc`, as a listing shows it.
#[cfg(any(test, feature = "internals"))]
fn listed_value(loc: hid_t, object: &CStr, name: &CStr) -> Result<ListedValue> {
    let what = || format!("cannot read attribute '{}'", name.to_string_lossy());
    let attr = super::Attribute::from_id(
        // SAFETY: `object` and `name` are C strings.
        unsafe {
            H5Aopen_by_name(
                loc,
                object.as_ptr(),
                name.as_ptr(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        },
        what,
    )?;
    // SAFETY: `attr` is an open attribute for the whole call; each returns a new id (or a
    // negative one, which `from_id` turns into an error) that the wrapper then owns and closes.
    let stored = Type::from_id(unsafe { H5Aget_type(attr.id()) }, what)?;
    // SAFETY: as above.
    let space = Space::from_id(unsafe { H5Aget_space(attr.id()) }, what)?;
    let kind = match stored.class() {
        H5T_class_t::H5T_STRING => "string".to_string(),
        // "float64", "compound (24 B)": the class without the size.
        _ => stored
            .describe()
            .split(" (")
            .next()
            .unwrap_or("")
            .to_string(),
    };
    // SAFETY: `space` is an open dataspace id owned by its wrapper; the call only reads it.
    if unsafe { hdf5_sys::h5s::H5Sget_simple_extent_type(space.id()) }
        == hdf5_sys::h5s::H5S_class_t::H5S_NULL
    {
        return Ok(ListedValue::Other(format!("{kind} (empty)")));
    }
    let (dims, count) = (space.dims()?, space.points()?);
    let array = dims.len() == 1;
    let summary = || {
        let extents: Vec<String> = dims.iter().map(u64::to_string).collect();
        match dims.is_empty() {
            true => ListedValue::Other(kind.clone()),
            false => ListedValue::Other(format!("{kind}[{}]", extents.join(", "))),
        }
    };
    if dims.len() > 1 || count > LISTED_ELEMENTS {
        return Ok(summary());
    }
    let count = count as usize;
    let as_dtype = match stored.class() {
        // SAFETY: `stored` is an open datatype id owned by its wrapper; the call only reads it.
        H5T_class_t::H5T_INTEGER => match unsafe { H5Tget_sign(stored.id()) } {
            H5T_sign_t::H5T_SGN_NONE => Dtype::UInt64,
            _ => Dtype::Int64,
        },
        H5T_class_t::H5T_FLOAT if stored.size() <= 4 => Dtype::Float32,
        H5T_class_t::H5T_FLOAT => Dtype::Float64,
        H5T_class_t::H5T_ENUM if Dtype::of_hdf5(&stored).ok() == Some(Dtype::Bool) => Dtype::Bool,
        H5T_class_t::H5T_STRING => {
            let values = read_texts(&attr, &stored, &space, count, what)?;
            return Ok(ListedValue::Texts { values, array });
        }
        _ => return Ok(summary()),
    };
    let mem = as_dtype.hdf5_type()?;
    let size = as_dtype.size();
    let mut bytes = vec![0u8; count * size];
    // SAFETY: `bytes` has room for the attribute's `count` elements of `mem`.
    check(
        unsafe { H5Aread(attr.id(), mem.id(), bytes.as_mut_ptr().cast()) },
        what,
    )?;
    let values = bytes
        .chunks_exact(size)
        .map(|b| match as_dtype {
            Dtype::Int64 => ListedNumber::Int(i64::from_ne_bytes(b.try_into().expect("8 bytes"))),
            Dtype::UInt64 => ListedNumber::UInt(u64::from_ne_bytes(b.try_into().expect("8 bytes"))),
            Dtype::Float32 => {
                ListedNumber::Float32(f32::from_ne_bytes(b.try_into().expect("4 bytes")))
            }
            Dtype::Float64 => {
                ListedNumber::Float64(f64::from_ne_bytes(b.try_into().expect("8 bytes")))
            }
            _ => ListedNumber::Bool(b[0] != 0),
        })
        .collect();
    Ok(ListedValue::Numbers { values, array })
}

/// The `count` strings of string attribute `attr` (of type `stored`, extent `space`).
#[cfg(any(test, feature = "internals"))]
fn read_texts(
    attr: &super::Attribute,
    stored: &Type,
    space: &Space,
    count: usize,
    what: impl Fn() -> String,
) -> Result<Vec<String>> {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    // SAFETY: `stored` is an open type.
    if unsafe { H5Tis_variable_str(stored.id()) } > 0 {
        let mut pointers: Vec<*mut c_char> = vec![std::ptr::null_mut(); count];
        // SAFETY: read in the attribute's own (variable-length) type, each element is a
        // pointer HDF5 allocates: `pointers` has room for `count`.
        check(
            unsafe { H5Aread(attr.id(), stored.id(), pointers.as_mut_ptr().cast()) },
            &what,
        )?;
        let texts = pointers
            .iter()
            .map(|&p| match p.is_null() {
                true => String::new(),
                // SAFETY: a NUL-terminated string HDF5 allocated, freed only below.
                false => text(unsafe { CStr::from_ptr(p) }.to_bytes()),
            })
            .collect();
        // SAFETY: `pointers` holds what HDF5 read for `space` in `stored`, freed once here.
        let reclaimed = unsafe {
            H5Treclaim(
                stored.id(),
                space.id(),
                H5P_DEFAULT,
                pointers.as_mut_ptr().cast(),
            )
        };
        if reclaimed < 0 {
            super::take_error_stack();
        }
        return Ok(texts);
    }
    let size = stored.size().max(1);
    let mut bytes = vec![0u8; count * size];
    // SAFETY: `bytes` has room for `count` fixed-length strings of `size` bytes.
    check(
        unsafe { H5Aread(attr.id(), stored.id(), bytes.as_mut_ptr().cast()) },
        &what,
    )?;
    // SAFETY: `stored` is an open string type.
    let space_padded = unsafe { H5Tget_strpad(stored.id()) } == H5T_str_t::H5T_STR_SPACEPAD;
    Ok(bytes
        .chunks_exact(size)
        .map(|s| {
            let s = s.split(|&b| b == 0).next().unwrap_or_default();
            match space_padded {
                true => text(s).trim_end_matches(' ').to_string(),
                false => text(s),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attribute `name` of the root of `file`, of `dtype` and extents `dims` (None: scalar),
    /// holding `data`.
    fn raw(file: &File, name: &str, dtype: hid_t, dims: Option<&[u64]>, data: *const c_void) {
        let space = match dims {
            None => Space::scalar().unwrap(),
            Some(d) => Space::simple(d).unwrap(),
        };
        let c = cstr(name);
        let what = String::new;
        // SAFETY: `c` is a C string; `data` holds the attribute's elements in `dtype`.
        let attr = super::super::Attribute::from_id(
            unsafe {
                H5Acreate2(
                    file.id(),
                    c.as_ptr(),
                    dtype,
                    space.id(),
                    H5P_DEFAULT,
                    H5P_DEFAULT,
                )
            },
            what,
        )
        .unwrap();
        // SAFETY: `attr` was just made with `space` of the elements `data` points to, and
        // `dtype` describes them; HDF5 reads exactly that many.
        check(unsafe { H5Awrite(attr.id(), dtype, data) }, what).unwrap();
    }

    #[test]
    fn each_kind_of_value_is_listed() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let file = File::create(&d.path().join("a.h5")).unwrap();
        let set =
            |name: &str, value: AttributeValue| file.set_attribute("/", name, &value).unwrap();
        let numbers = |dtype, bytes| AttributeValue::Numbers { dtype, bytes };
        set("i", numbers(Dtype::Int64, (-50i64).to_ne_bytes().to_vec()));
        set("u8s", numbers(Dtype::UInt8, vec![1, 2, 3]));
        set(
            "f32",
            numbers(Dtype::Float32, 0.1f32.to_ne_bytes().to_vec()),
        );
        set(
            "f64",
            numbers(Dtype::Float64, 1.0f64.to_ne_bytes().to_vec()),
        );
        set("ok", numbers(Dtype::Bool, vec![1]));
        let long: Vec<u8> = (0..1000i64).flat_map(i64::to_ne_bytes).collect();
        set("long", numbers(Dtype::Int64, long));
        set("text", AttributeValue::Text("say \"hi\"\n".into()));
        set("wide", AttributeValue::Text("x".repeat(100)));
        // Fixed-length strings, as netCDF and h5py's numpy bytes write them.
        let fixed = Type::copy(*H5T_C_S1).unwrap();
        // SAFETY: `fixed` is a copy of a string type this test owns; setting its size is
        // allowed on a copy.
        check(unsafe { H5Tset_size(fixed.id(), 4) }, String::new).unwrap();
        raw(
            &file,
            "fixed",
            fixed.id(),
            Some(&[2]),
            b"ab\0\0cdef".as_ptr().cast(),
        );
        let complex = Dtype::Complex128.hdf5_type().unwrap();
        raw(
            &file,
            "z",
            complex.id(),
            None,
            [1.0f64, 2.0].as_ptr().cast(),
        );
        let grid = Dtype::Float64.hdf5_type().unwrap();
        raw(
            &file,
            "m",
            grid.id(),
            Some(&[2, 2]),
            [0.0f64; 4].as_ptr().cast(),
        );
        set("hidden", numbers(Dtype::Int8, vec![1]));
        raw(
            &file,
            "none",
            grid.id(),
            Some(&[0]),
            [0.0f64].as_ptr().cast(),
        );

        let shown: Vec<String> = file
            .listed_attributes("/", &|name| name != "hidden")
            .unwrap()
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        let wide = format!("wide = \"{}…\"", "x".repeat(80));
        let expected = [
            "f32 = 0.1",
            "f64 = 1.0",
            "fixed = [\"ab\", \"cdef\"]",
            "i = -50",
            "long = int64[1000]",
            "m = float64[2, 2]",
            "none = []",
            "ok = true",
            "text = \"say \\\"hi\\\"\\n\"",
            "u8s = [1, 2, 3]",
            &wide,
            "z = complex128",
        ];
        assert_eq!(shown, expected);
        let missing = file.listed_attributes("/nothing", &|_| true).unwrap_err();
        assert!(
            missing.message.contains("'/nothing'"),
            "{}",
            missing.message
        );
    }
}
