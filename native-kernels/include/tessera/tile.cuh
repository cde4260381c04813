// Umbrella header of the tile primitives (Crystal's model, DESIGN.md §3).
//
// A thread block processes one tile of BLOCK_THREADS x ITEMS_PER_THREAD items. Items are
// striped: item ITEM of thread tid sits at tile offset tid + ITEM * BLOCK_THREADS, so every
// load and store of a warp is coalesced. Each primitive has an unchecked full-tile path and a
// num_items-guarded partial-tile path, and a public wrapper that picks between them.
#pragma once

#include "tessera/config.cuh"
#include "tessera/load.cuh"
#include "tessera/store.cuh"
#include "tessera/reduce.cuh"
#include "tessera/scan.cuh"
#include "tessera/lookback.cuh"
