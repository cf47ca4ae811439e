/* SPDX-License-Identifier: MIT */
#pragma once

/* The memory of one unpacked frame. protobuf-c allocates every message, string and array of a frame on
 * its own, and freeing walks the message to find them again: for a report, a fifth of its whole path
 * through the commander. Unpacked with a block's allocator, a frame takes its memory from the block, and
 * frame_block_free() gives it all back at once, without a walk. What does not fit in the block (a Users
 * frame's names, a Package's blob) is allocated apart, chained to the block and freed with it; what
 * protobuf-c frees while it unpacks (its scratch arrays) is freed then.
 *
 * The frame is the block's first allocation (protobuf-c allocates the message itself before anything
 * else), which is how frame_block_of() finds a frame's block. Under AddressSanitizer everything after it
 * spills, so that the sanitizer sees each allocation's bounds. */

#include <protobuf-c/protobuf-c.h>

typedef struct FrameBlock FrameBlock;

/* NULL when out of memory. */
FrameBlock *frame_block_new(void);
/* Frees all that was allocated from the block, and the block, or keeps it for the next frame_block_new()
 * (one per thread, outside AddressSanitizer builds); NULL is fine. Returns NULL. */
FrameBlock *frame_block_free(FrameBlock *b);
/* The allocator to unpack with; valid as long as the block. */
ProtobufCAllocator *frame_block_allocator(FrameBlock *b);
/* The block's first allocation: the unpacked message, when the block was unpacked into. */
void *frame_block_first(FrameBlock *b);
/* The block of which m is the first allocation. */
FrameBlock *frame_block_of(void *m);
