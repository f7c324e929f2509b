package ikllm

// Splitting a chat model's output into reasoning, content and tool calls (streaming or one-shot).

/*
#include <stdlib.h>
#include "ikllm_gen.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// ChatParse says where a reply comes from; every field is optional.
type ChatParse struct {
	Model    *Model         // its default template selects the format when Format and Template are ""
	Format   string         // "llama3", "hermes", "mistral", "deepseek", "generic", "none"; "" = detect
	Template string         // template text to detect the format from
	Prompt   string         // the rendered prompt the reply continues
	Flags    ChatParseFlags // ChatParseInReasoning | ChatParseNoTools | ChatParseNoReasoning
}

// ToolCall is one tool call found in a reply.
type ToolCall struct {
	ID, Name  string
	Arguments string // the arguments' JSON object text
}

type chatArgs struct {
	model                    *C.ikllm_model
	format, template, prompt *C.char
}

func (a ChatParse) c() chatArgs {
	var m *C.ikllm_model
	if a.Model != nil {
		m = a.Model.ptr
	}
	return chatArgs{m, optCString(a.Format), optCString(a.Template), optCString(a.Prompt)}
}

func (c chatArgs) free() {
	for _, p := range []*C.char{c.format, c.template, c.prompt} {
		C.free(unsafe.Pointer(p))
	}
}

// ChatParser parses one reply at a time, incrementally; its methods serialize on a lock.
type ChatParser struct {
	mu    sync.Mutex
	ptr   *C.ikllm_chat_parser
	model *Model
}

// NewChatParser creates a parser (ErrInvalidArgument for an unknown format or flag).
func NewChatParser(args ChatParse) (*ChatParser, error) {
	if args.Model != nil {
		if err := args.Model.own.acquire(); err != nil {
			return nil, err
		}
	}
	c := args.c()
	defer c.free()
	p := &ChatParser{model: args.Model}
	err := call(func() C.ikllm_status {
		return C.ikllm_chat_parser_create(c.model, c.format, c.template, c.prompt, C.uint32_t(args.Flags), &p.ptr)
	})
	if err != nil {
		if args.Model != nil {
			args.Model.own.release()
		}
		return nil, err
	}
	runtime.SetFinalizer(p, (*ChatParser).Close)
	return p, nil
}

// Close frees the parser. Idempotent.
func (p *ChatParser) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ptr != nil {
		C.ikllm_chat_parser_free(p.ptr)
		p.ptr = nil
		if p.model != nil {
			p.model.own.release()
		}
	}
	return nil
}

func (p *ChatParser) lock() error {
	p.mu.Lock()
	if p.ptr == nil {
		p.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Format is the format in use after detection, e.g. "hermes".
func (p *ChatParser) Format() string {
	if p.lock() != nil {
		return ""
	}
	defer p.mu.Unlock()
	return C.GoString(C.ikllm_chat_parser_format(p.ptr))
}

// Push feeds generated text (special tokens rendered) and returns the delta JSON.
func (p *ChatParser) Push(text string) (string, error) {
	if err := p.lock(); err != nil {
		return "", err
	}
	defer p.mu.Unlock()
	t := C.CString(text)
	defer C.free(unsafe.Pointer(t))
	var d *C.char
	var n C.size_t
	if err := call(func() C.ikllm_status { return C.ikllm_chat_parser_push(p.ptr, t, C.size_t(len(text)), &d, &n) }); err != nil {
		return "", err
	}
	return C.GoStringN(d, C.int(n)), nil
}

// Finish ends the reply: the last delta JSON and the whole message JSON.
func (p *ChatParser) Finish() (delta, message string, err error) {
	if err := p.lock(); err != nil {
		return "", "", err
	}
	defer p.mu.Unlock()
	var d, m *C.char
	var dn, mn C.size_t
	if err := call(func() C.ikllm_status { return C.ikllm_chat_parser_finish(p.ptr, &d, &dn, &m, &mn) }); err != nil {
		return "", "", err
	}
	return C.GoStringN(d, C.int(dn)), C.GoStringN(m, C.int(mn)), nil
}

// Reset starts a new reply with the same settings.
func (p *ChatParser) Reset() error {
	if err := p.lock(); err != nil {
		return err
	}
	defer p.mu.Unlock()
	return call(func() C.ikllm_status { return C.ikllm_chat_parser_reset(p.ptr) })
}

// Text returns one of the texts (ChatTextContent, ChatTextReasoning, or their deltas).
func (p *ChatParser) Text(which ChatText) (string, error) {
	if err := p.lock(); err != nil {
		return "", err
	}
	defer p.mu.Unlock()
	var t *C.char
	var n C.size_t
	if err := call(func() C.ikllm_status { return C.ikllm_chat_parser_text(p.ptr, C.int32_t(which), &t, &n) }); err != nil {
		return "", err
	}
	return C.GoStringN(t, C.int(n)), nil
}

// ToolCalls lists the tool calls found so far.
func (p *ChatParser) ToolCalls() ([]ToolCall, error) {
	if err := p.lock(); err != nil {
		return nil, err
	}
	defer p.mu.Unlock()
	n := int(C.ikllm_chat_parser_tool_call_count(p.ptr))
	out := make([]ToolCall, 0, n)
	for i := 0; i < n; i++ {
		var id, name, args *C.char
		if err := call(func() C.ikllm_status {
			return C.ikllm_chat_parser_tool_call(p.ptr, C.int32_t(i), &id, &name, &args)
		}); err != nil {
			return nil, err
		}
		out = append(out, ToolCall{C.GoString(id), C.GoString(name), C.GoString(args)})
	}
	return out, nil
}

// ParseChat parses a whole reply at once and returns the message JSON
// ({"reasoning_content", "content", "tool_calls"}).
func ParseChat(args ChatParse, text string) (string, error) {
	c := args.c()
	defer c.free()
	t := C.CString(text)
	defer C.free(unsafe.Pointer(t))
	b, err := readText(func(buf *C.char, size C.size_t, needed *C.size_t) C.ikllm_status {
		return C.ikllm_chat_parse(c.model, c.format, c.template, c.prompt, C.uint32_t(args.Flags), t,
			C.size_t(len(text)), buf, size, needed)
	})
	runtime.KeepAlive(args.Model)
	return string(b), err
}
