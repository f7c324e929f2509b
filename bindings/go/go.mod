module ikllm.dev/ikllm

go 1.19
