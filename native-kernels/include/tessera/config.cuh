// Launch geometry shared by the kernels and mirrored in Java (dev.tessera.gpu.cuda.LaunchShape;
// ProgramAbiTest checks that the two agree).
#pragma once

namespace tessera {

// The Crystal thesis default tile: 128 threads x 4 items.
constexpr int kBlockThreads = 128;
constexpr int kItemsPerThread = 4;
constexpr int kTileItems = kBlockThreads * kItemsPerThread;

}  // namespace tessera
