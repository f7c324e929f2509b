package ikllm

// Chat template rendering and JSON-schema-to-grammar conversion (stateless helpers).

/*
#include <stdlib.h>
#include "ikllm_gen.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ChatRender are the arguments of RenderChat beyond the messages.
type ChatRender struct {
	Template            string   // template source; "" renders the model's default template
	ToolsJSON           string   // JSON array of tool schemas; "" = none
	ExtraVarsJSON       string   // JSON object of extra template variables; "" = none
	AddGenerationPrompt bool     // end with the assistant's turn header
	Options             *Options // OptionsChat options ("now", "max_output_bytes"); nil = defaults
}

func optCString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// RenderChat renders a chat template over messagesJSON (a JSON array of {"role", "content"}
// objects) as transformers' apply_chat_template(tokenize=False) does. model may be nil when a
// template is given. Errors: ErrTemplate for template failures, ErrInvalidArgument for bad JSON.
func RenderChat(model *Model, messagesJSON string, args ChatRender) (string, error) {
	var m *C.ikllm_model
	if model != nil {
		m = model.ptr
	}
	tpl, tools, extra := optCString(args.Template), optCString(args.ToolsJSON), optCString(args.ExtraVarsJSON)
	msgs := C.CString(messagesJSON)
	defer func() {
		for _, p := range []*C.char{tpl, tools, extra, msgs} {
			C.free(unsafe.Pointer(p))
		}
	}()
	gen := C.int32_t(0)
	if args.AddGenerationPrompt {
		gen = 1
	}
	b, err := readText(func(buf *C.char, size C.size_t, needed *C.size_t) C.ikllm_status {
		return C.ikllm_chat_render(m, tpl, msgs, tools, extra, gen, args.Options.raw(), buf, size, needed)
	})
	runtime.KeepAlive(model)
	runtime.KeepAlive(args.Options)
	return string(b), err
}

// JSONSchemaToGrammar converts a JSON Schema to GBNF grammar text (start rule "root");
// ErrGrammar for malformed or unsupported schemas.
func JSONSchemaToGrammar(schemaJSON string) (string, error) {
	s := C.CString(schemaJSON)
	defer C.free(unsafe.Pointer(s))
	var out *C.char
	if err := call(func() C.ikllm_status { return C.ikllm_json_schema_to_grammar(s, &out) }); err != nil {
		return "", err
	}
	defer C.ikllm_free(unsafe.Pointer(out))
	return C.GoString(out), nil
}
