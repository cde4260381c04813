// The one translation unit nvcc builds into tessera.fatbin: every kernel file is included here,
// so the Java side loads a single module. Entry points are extern "C" so their names are stable.
#include "smoke.cu"
#include "filter_project.cu"
#include "hash_aggregate.cu"
#include "hash_join.cu"
#include "column_sum.cu"
#include "top_k.cu"
