//! The message layer's shared test cases (run by `cargo test` and as the `streams_msg` KUnit
//! suite). Cases live in `alloc.rs` (allocation, block accessors, esballoc, dupb/COW) and
//! `ops.rs` (chain utilities), `cache.rs` (the message block cache), `copyin.rs` (messages
//! copied in from user space without zeroing); this file holds their
//! helpers and the one suite table.
//!
//! Fault injection is per thread on the host and global in the kernel, so every case that sets
//! it holds a [`FailGuard`], which clears it on every way out of the case.

use super::{Msg, MsgType};
use crate::sys::{fault, NoMem};

mod alloc;
mod cache;
mod copyin;
mod ops;

use self::alloc::*;
use self::cache::*;
use self::copyin::*;
use self::ops::*;

/// Clears fault injection when dropped (also when a check returns early).
pub(super) struct FailGuard;

impl Drop for FailGuard {
    fn drop(&mut self) {
        fault::fail_clear();
    }
}

/// Let `n` allocations succeed, then fail, until the guard is dropped.
pub(super) fn fail_after(n: usize) -> FailGuard {
    fault::fail_after(n);
    FailGuard
}

/// A message with one block per part, of the given types and contents (each block sized
/// exactly to its bytes).
pub(super) fn build(parts: &[(MsgType, &[u8])]) -> Result<Msg, NoMem> {
    let mut head: Option<Msg> = None;
    for (ty, bytes) in parts {
        let b = Msg::from_bytes(*ty, bytes)?;
        match head.as_mut() {
            Some(h) => h.linkb(b),
            None => head = Some(b),
        }
    }
    head.ok_or(NoMem)
}

/// The message's readable bytes, block after block, are exactly `want`.
pub(super) fn bytes_are(m: &Msg, want: &[u8]) -> bool {
    let mut off = 0;
    for b in m.blocks() {
        let r = b.rd();
        match want.get(off..off + r.len()) {
            Some(w) if w == r => off += r.len(),
            _ => return false,
        }
    }
    off == want.len()
}

/// The blocks have exactly these lengths.
pub(super) fn lens_are(m: &Msg, want: &[usize]) -> bool {
    m.blocks().count() == want.len() && m.blocks().zip(want).all(|(b, w)| b.blen() == *w)
}

/// The blocks have exactly these types.
pub(super) fn types_are(m: &Msg, want: &[MsgType]) -> bool {
    m.blocks().count() == want.len() && m.blocks().zip(want).all(|(b, w)| b.db_type() == *w)
}

crate::ktest_suite!(MSG_SUITE, "streams_msg":
    // alloc.rs
    allocb_new_block_is_empty_mdata,
    allocb_127_uses_fast_buffer,
    allocb_128_uses_fast_buffer,
    allocb_129_uses_heap_block,
    allocb_zero_size,
    allocb_fast_is_one_allocation,
    allocb_heap_fails_on_either_allocation,
    with_type_sets_type,
    from_bytes_copies_exactly,
    from_bytes_large_is_heap,
    append_stops_at_db_lim,
    rd_mut_writes_in_place,
    adj_rptr_clamps_to_wptr,
    unadj_rptr_clamps_to_base,
    adj_wptr_publishes_spare_bytes,
    trim_wptr_clamps_to_rptr,
    reset_empties_block,
    flags_set_and_combine,
    datamsg_and_pcmsg_classify,
    esballoc_wraps_caller_buffer,
    esballoc_failure_hands_buffer_back,
    esballoc_free_once_after_all_dups,
    esballoc_copy_does_not_hold_buffer,
    freemsg_runs_every_free_routine,
    freeb_returns_b_cont,
    long_chain_drop_is_iterative,
    dupb_shares_bytes_and_fields,
    dupb_makes_both_read_only,
    make_writable_copies_on_write,
    make_writable_is_noop_when_unique,
    make_writable_failure_changes_nothing,
    dupb_box_failure_changes_nothing,
    dupb_share_failure_changes_nothing,
    dupb_of_shared_needs_one_allocation,
    dup_pointers_are_independent,
    dupmsg_dups_every_block,
    dupmsg_failure_is_all_or_nothing,
    // cache.rs
    cache_reuses_freed_block,
    cache_block_shows_no_earlier_bytes,
    cache_keeps_pools_apart,
    cache_hit_obeys_fault_injection,
    free_list_is_bounded,
    trim_and_drain_give_blocks_back,
    long_list_drop_is_iterative,
    page_cache_shows_no_earlier_bytes,
    page_hit_obeys_fault_injection,
    pullup_of_charged_block_goes_back_atomic,
    buffer_classes_show_no_earlier_bytes,
    depot_shelf_moves_whole_magazines,
    // copyin.rs
    filled_vec_is_what_was_copied,
    filled_vec_fault_at_zero_and_size_zero,
    filled_vec_obeys_fault_injection,
    copied_in_whole,
    copied_in_short_shows_only_what_precedes_the_fault,
    copied_in_fault_at_zero,
    copied_in_obeys_fault_injection,
    // ops.rs
    copyb_is_deep_and_keeps_offsets,
    copyb_of_shared_is_unique,
    copymsg_keeps_types_and_bytes,
    copymsg_failure_is_all_or_nothing,
    long_chain_dup_and_copy,
    linkb_appends_at_end,
    unlinkb_detaches_rest,
    rmvb_first_block,
    rmvb_middle_and_last_block,
    rmvb_out_of_range_gives_message_back,
    pullupmsg_all_stops_at_type_change,
    pullupmsg_len_splits_a_block,
    pullupmsg_noop_when_first_block_suffices,
    pullupmsg_too_short_changes_nothing,
    pullupmsg_nomem_changes_nothing,
    pullupmsg_unshares_data,
    msgpullup_leaves_original_untouched,
    msgpullup_len_and_errors,
    adjmsg_head_across_blocks,
    adjmsg_tail_across_blocks,
    adjmsg_tail_only_trims_leading_run,
    adjmsg_keeps_first_block,
    adjmsg_too_short_changes_nothing,
    sizes_count_the_right_blocks,
    blocks_iterate_and_index,
);
