/* LD_PRELOAD shim for llama.cpp's tools on CPUs that report AMX but crash in its AMX kernels
   (ggml_backend_amx_mul_mat): the AMX buffer type is reported absent, so the tools keep the other
   repacked AVX kernels, as specgen does after its kernel probe. Build:
   cc -shared -fPIC -O2 -o noamx.so noamx.c */
void *_Z28ggml_backend_amx_buffer_typev(void) { return 0; }
