#pragma once
// The speech task: requests that speak in a voice. Voices are prefilled once
// into sources shared by every request naming them; a request prefills its
// conditioning tokens (causally) in its first step, then decodes one token a
// step, sampled from the model's logits (with classifier-free guidance when
// each request has two rows), streaming chunks until an end token or
// max_tokens.
//
//   {"id": "r1", "voice": "alice", "prompt": [5, 9, 2], "max_tokens": 64,
//    "sampling": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7}}
//   {"id": "r2", "voice": "alice", "text": "Hello.", "max_tokens": 64}   (a model with a tokenizer)
#include "engine/program.h"

namespace mstar {

ProgramKind speech_program();

}  // namespace mstar
