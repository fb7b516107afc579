//! The trampoline through which a ring side's inline lock loop reaches its
//! cold path (`repair::ring_lock_cold`) on x86-64 without making its caller
//! save any register: the callers that inline the ring stay leaf functions
//! with no stack frame, as they were with a plain spinlock.

// The trampoline `cold_check` calls: saves every register the C ABI lets a
// callee clobber (the eight GPRs but `rax`, and the vector registers as wide
// as the build's target features make them: xmm0-15, ymm0-15 with AVX,
// zmm0-31 and k0-7 with AVX-512), aligns the stack, calls `ring_lock_cold`
// with its argument as it came (`rdi`), restores, returns its result in
// `eax`. The x87 and MMX state is empty at any call, and the
// control words are callee-saved, as the ABI requires of `ring_lock_cold`.

/// The trampoline for one width of vector registers: `$bytes` of them,
/// saved by `$save` and restored by `$restore` (instruction strings) below
/// the eight GPRs.
macro_rules! cold_trampoline {
    ($cfg:meta, $bytes:literal, [$($save:literal),*], [$($restore:literal),*]) => {
        #[cfg(all(ring_asm, $cfg))]
        core::arch::global_asm!(
            ".pushsection .text.ptr_ring_lock_cold_trampoline,\"ax\",@progbits",
            ".globl ptr_ring_lock_cold_trampoline",
            ".hidden ptr_ring_lock_cold_trampoline",
            ".type ptr_ring_lock_cold_trampoline,@function",
            ".p2align 4",
            "ptr_ring_lock_cold_trampoline:",
            "push rbp",
            "mov rbp, rsp",
            "and rsp, -64",
            concat!("sub rsp, ", $bytes, " + 64"),
            concat!("mov [rsp + ", $bytes, "], rcx"),
            concat!("mov [rsp + ", $bytes, " + 8], rdx"),
            concat!("mov [rsp + ", $bytes, " + 16], rsi"),
            concat!("mov [rsp + ", $bytes, " + 24], rdi"),
            concat!("mov [rsp + ", $bytes, " + 32], r8"),
            concat!("mov [rsp + ", $bytes, " + 40], r9"),
            concat!("mov [rsp + ", $bytes, " + 48], r10"),
            concat!("mov [rsp + ", $bytes, " + 56], r11"),
            $($save,)*
            "call {cold}",
            $($restore,)*
            concat!("mov rcx, [rsp + ", $bytes, "]"),
            concat!("mov rdx, [rsp + ", $bytes, " + 8]"),
            concat!("mov rsi, [rsp + ", $bytes, " + 16]"),
            concat!("mov rdi, [rsp + ", $bytes, " + 24]"),
            concat!("mov r8, [rsp + ", $bytes, " + 32]"),
            concat!("mov r9, [rsp + ", $bytes, " + 40]"),
            concat!("mov r10, [rsp + ", $bytes, " + 48]"),
            concat!("mov r11, [rsp + ", $bytes, " + 56]"),
            "mov rsp, rbp",
            "pop rbp",
            "ret",
            ".size ptr_ring_lock_cold_trampoline, . - ptr_ring_lock_cold_trampoline",
            ".popsection",
            cold = sym super::repair::ring_lock_cold,
        );
    };
}

cold_trampoline!(
    not(target_feature = "avx"),
    256,
    [
        "movups [rsp + 0], xmm0",
        "movups [rsp + 16], xmm1",
        "movups [rsp + 32], xmm2",
        "movups [rsp + 48], xmm3",
        "movups [rsp + 64], xmm4",
        "movups [rsp + 80], xmm5",
        "movups [rsp + 96], xmm6",
        "movups [rsp + 112], xmm7",
        "movups [rsp + 128], xmm8",
        "movups [rsp + 144], xmm9",
        "movups [rsp + 160], xmm10",
        "movups [rsp + 176], xmm11",
        "movups [rsp + 192], xmm12",
        "movups [rsp + 208], xmm13",
        "movups [rsp + 224], xmm14",
        "movups [rsp + 240], xmm15"
    ],
    [
        "movups xmm0, [rsp + 0]",
        "movups xmm1, [rsp + 16]",
        "movups xmm2, [rsp + 32]",
        "movups xmm3, [rsp + 48]",
        "movups xmm4, [rsp + 64]",
        "movups xmm5, [rsp + 80]",
        "movups xmm6, [rsp + 96]",
        "movups xmm7, [rsp + 112]",
        "movups xmm8, [rsp + 128]",
        "movups xmm9, [rsp + 144]",
        "movups xmm10, [rsp + 160]",
        "movups xmm11, [rsp + 176]",
        "movups xmm12, [rsp + 192]",
        "movups xmm13, [rsp + 208]",
        "movups xmm14, [rsp + 224]",
        "movups xmm15, [rsp + 240]"
    ]
);
cold_trampoline!(
    all(target_feature = "avx", not(target_feature = "avx512f")),
    512,
    [
        "vmovdqu [rsp + 0], ymm0",
        "vmovdqu [rsp + 32], ymm1",
        "vmovdqu [rsp + 64], ymm2",
        "vmovdqu [rsp + 96], ymm3",
        "vmovdqu [rsp + 128], ymm4",
        "vmovdqu [rsp + 160], ymm5",
        "vmovdqu [rsp + 192], ymm6",
        "vmovdqu [rsp + 224], ymm7",
        "vmovdqu [rsp + 256], ymm8",
        "vmovdqu [rsp + 288], ymm9",
        "vmovdqu [rsp + 320], ymm10",
        "vmovdqu [rsp + 352], ymm11",
        "vmovdqu [rsp + 384], ymm12",
        "vmovdqu [rsp + 416], ymm13",
        "vmovdqu [rsp + 448], ymm14",
        "vmovdqu [rsp + 480], ymm15"
    ],
    [
        "vmovdqu ymm0, [rsp + 0]",
        "vmovdqu ymm1, [rsp + 32]",
        "vmovdqu ymm2, [rsp + 64]",
        "vmovdqu ymm3, [rsp + 96]",
        "vmovdqu ymm4, [rsp + 128]",
        "vmovdqu ymm5, [rsp + 160]",
        "vmovdqu ymm6, [rsp + 192]",
        "vmovdqu ymm7, [rsp + 224]",
        "vmovdqu ymm8, [rsp + 256]",
        "vmovdqu ymm9, [rsp + 288]",
        "vmovdqu ymm10, [rsp + 320]",
        "vmovdqu ymm11, [rsp + 352]",
        "vmovdqu ymm12, [rsp + 384]",
        "vmovdqu ymm13, [rsp + 416]",
        "vmovdqu ymm14, [rsp + 448]",
        "vmovdqu ymm15, [rsp + 480]"
    ]
);
cold_trampoline!(
    target_feature = "avx512f",
    2112,
    [
        "vmovdqu64 [rsp + 0], zmm0",
        "vmovdqu64 [rsp + 64], zmm1",
        "vmovdqu64 [rsp + 128], zmm2",
        "vmovdqu64 [rsp + 192], zmm3",
        "vmovdqu64 [rsp + 256], zmm4",
        "vmovdqu64 [rsp + 320], zmm5",
        "vmovdqu64 [rsp + 384], zmm6",
        "vmovdqu64 [rsp + 448], zmm7",
        "vmovdqu64 [rsp + 512], zmm8",
        "vmovdqu64 [rsp + 576], zmm9",
        "vmovdqu64 [rsp + 640], zmm10",
        "vmovdqu64 [rsp + 704], zmm11",
        "vmovdqu64 [rsp + 768], zmm12",
        "vmovdqu64 [rsp + 832], zmm13",
        "vmovdqu64 [rsp + 896], zmm14",
        "vmovdqu64 [rsp + 960], zmm15",
        "vmovdqu64 [rsp + 1024], zmm16",
        "vmovdqu64 [rsp + 1088], zmm17",
        "vmovdqu64 [rsp + 1152], zmm18",
        "vmovdqu64 [rsp + 1216], zmm19",
        "vmovdqu64 [rsp + 1280], zmm20",
        "vmovdqu64 [rsp + 1344], zmm21",
        "vmovdqu64 [rsp + 1408], zmm22",
        "vmovdqu64 [rsp + 1472], zmm23",
        "vmovdqu64 [rsp + 1536], zmm24",
        "vmovdqu64 [rsp + 1600], zmm25",
        "vmovdqu64 [rsp + 1664], zmm26",
        "vmovdqu64 [rsp + 1728], zmm27",
        "vmovdqu64 [rsp + 1792], zmm28",
        "vmovdqu64 [rsp + 1856], zmm29",
        "vmovdqu64 [rsp + 1920], zmm30",
        "vmovdqu64 [rsp + 1984], zmm31",
        "kmovq [rsp + 2048], k0",
        "kmovq [rsp + 2056], k1",
        "kmovq [rsp + 2064], k2",
        "kmovq [rsp + 2072], k3",
        "kmovq [rsp + 2080], k4",
        "kmovq [rsp + 2088], k5",
        "kmovq [rsp + 2096], k6",
        "kmovq [rsp + 2104], k7"
    ],
    [
        "vmovdqu64 zmm0, [rsp + 0]",
        "vmovdqu64 zmm1, [rsp + 64]",
        "vmovdqu64 zmm2, [rsp + 128]",
        "vmovdqu64 zmm3, [rsp + 192]",
        "vmovdqu64 zmm4, [rsp + 256]",
        "vmovdqu64 zmm5, [rsp + 320]",
        "vmovdqu64 zmm6, [rsp + 384]",
        "vmovdqu64 zmm7, [rsp + 448]",
        "vmovdqu64 zmm8, [rsp + 512]",
        "vmovdqu64 zmm9, [rsp + 576]",
        "vmovdqu64 zmm10, [rsp + 640]",
        "vmovdqu64 zmm11, [rsp + 704]",
        "vmovdqu64 zmm12, [rsp + 768]",
        "vmovdqu64 zmm13, [rsp + 832]",
        "vmovdqu64 zmm14, [rsp + 896]",
        "vmovdqu64 zmm15, [rsp + 960]",
        "vmovdqu64 zmm16, [rsp + 1024]",
        "vmovdqu64 zmm17, [rsp + 1088]",
        "vmovdqu64 zmm18, [rsp + 1152]",
        "vmovdqu64 zmm19, [rsp + 1216]",
        "vmovdqu64 zmm20, [rsp + 1280]",
        "vmovdqu64 zmm21, [rsp + 1344]",
        "vmovdqu64 zmm22, [rsp + 1408]",
        "vmovdqu64 zmm23, [rsp + 1472]",
        "vmovdqu64 zmm24, [rsp + 1536]",
        "vmovdqu64 zmm25, [rsp + 1600]",
        "vmovdqu64 zmm26, [rsp + 1664]",
        "vmovdqu64 zmm27, [rsp + 1728]",
        "vmovdqu64 zmm28, [rsp + 1792]",
        "vmovdqu64 zmm29, [rsp + 1856]",
        "vmovdqu64 zmm30, [rsp + 1920]",
        "vmovdqu64 zmm31, [rsp + 1984]",
        "kmovq k0, [rsp + 2048]",
        "kmovq k1, [rsp + 2056]",
        "kmovq k2, [rsp + 2064]",
        "kmovq k3, [rsp + 2072]",
        "kmovq k4, [rsp + 2080]",
        "kmovq k5, [rsp + 2088]",
        "kmovq k6, [rsp + 2096]",
        "kmovq k7, [rsp + 2104]"
    ]
);
