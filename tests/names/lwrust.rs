// lwrust.rs: a Rust library whose function lagwatch must name as a Rust
// developer reads it, "lwrust::deep::work", built twice: with the legacy
// mangling (_ZN6lwrust4deep4work17h<hash>E) and with v0 (_RNv...).
pub mod deep {
    #[inline(never)]
    pub fn work(n: u64) -> u64 {
        let mut v = 0u64;
        for i in 0..n {
            v = v.wrapping_mul(31).wrapping_add(i);
        }
        v
    }
}

#[no_mangle]
pub extern "C" fn lw_rust_work_address() -> usize {
    deep::work as *const () as usize
}
