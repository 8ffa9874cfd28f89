//! Generates the bindings of the OTF2 library (Debian: `libotf2-trace-dev`,
//! which installs `libopen-trace-format2`) and links it. A missing library
//! stops the build with a message that says what to install, not with a
//! linker error.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-env-changed=OTF2_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=OTF2_LIB_DIR");
    let include = std::env::var("OTF2_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".into());
    if !PathBuf::from(&include).join("otf2/otf2.h").exists() {
        panic!(
            "otf2/otf2.h not found under {include}: install the OTF2 library \
             (Debian/Ubuntu: apt-get install libotf2-trace-dev otf2-tools), \
             or set OTF2_INCLUDE_DIR and OTF2_LIB_DIR"
        );
    }
    if let Ok(dir) = std::env::var("OTF2_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=open-trace-format2");
    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{include}"))
        .allowlist_function("OTF2_.*")
        .allowlist_type("OTF2_.*")
        .allowlist_var("OTF2_.*")
        .derive_default(true)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("generating the OTF2 bindings");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("writing the OTF2 bindings");
}
