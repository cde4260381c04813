// The prelude experiment of PreludeCallTest (issue 14): hand-written device helpers that generated
// PTX kernels call. Its PTX, prelude_experiment.nvcc.ptx, is nvcc's output unchanged:
//
//   nvcc -rdc=true -ptx -arch=sm_90 prelude_experiment.cu -o prelude_experiment.nvcc.ptx
//
// (CUDA 13.0.88, which writes .version 9.0; PtxPrelude.retarget lowers it for the in-jar compiler).
// The block helpers assume 128-thread blocks (4 warps).

__device__ __forceinline__ int warp_inclusive_sum(int v) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    int n = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += n;
  }
  return v;
}

// Exclusive prefix sum of value over the block and the block total, from per-warp totals.
__device__ __forceinline__ int block_exclusive_sum(int value, int* total) {
  __shared__ int warp_totals[4];
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  int inclusive = warp_inclusive_sum(value);
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  int offset = 0, sum = 0;
#pragma unroll
  for (int w = 0; w < 4; w++) {
    int t = warp_totals[w];
    if (w < warp) offset += t;
    sum += t;
  }
  __syncthreads();
  *total = sum;
  return offset + inclusive - value;
}

// Variant 1: the total through an out-pointer (the caller passes the address of a local).
extern "C" __device__ int tessera_block_exclusive_sum(int value, int* total) {
  return block_exclusive_sum(value, total);
}

// Variant 2: both results packed into one 64-bit return, (total << 32) | prefix.
extern "C" __device__ unsigned long long tessera_block_exclusive_sum_packed(int value) {
  int total;
  int prefix = block_exclusive_sum(value, &total);
  return ((unsigned long long)(unsigned)total << 32) | (unsigned)prefix;
}

// Variant 3: both results as an 8-byte struct return.
struct TesseraScan {
  int prefix;
  int total;
};
extern "C" __device__ TesseraScan tessera_block_exclusive_sum_pair(int value) {
  TesseraScan scan;
  scan.prefix = block_exclusive_sum(value, &scan.total);
  return scan;
}

// Byte-wise three-way compare of two strings in global memory (code point order for valid UTF-8):
// pointer arguments into global memory, a loop in the callee.
extern "C" __device__ int tessera_utf8_compare(const unsigned char* a, int a_len,
                                               const unsigned char* b, int b_len) {
  int n = a_len < b_len ? a_len : b_len;
  for (int i = 0; i < n; i++) {
    int d = (int)a[i] - (int)b[i];
    if (d != 0) return d < 0 ? -1 : 1;
  }
  return a_len == b_len ? 0 : (a_len < b_len ? -1 : 1);
}
