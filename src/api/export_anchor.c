/* The shared library's code comes from the engine archive; this file only gives the
   target a source. Exported symbols are limited to ikllm_* by ikllm.map. */
typedef int ikllm_export_anchor_unused;
