// The names scenario 5's instruction count gives callgrind's functions (test/bench/scenarios/instructions.ts):
// the report lists them, so they must not carry addresses, argument lists or build paths.

import { describe, expect, it } from 'vitest';
import { functionName, functionsOfAnnotation, kindOf } from '../bench/scenarios/instructions.js';

const map = (addr: number) =>
  addr === 0xd076b00 ? 'JS:*next file:///work/main/dist/src/api/jsonbytes.js:317:9' : addr === 0xd0764c0 ? 'JS:^copy node:buffer:826:16' : addr === 0x1928ac0 ? 'Builtin:IterableToFixedArrayForWasm' : undefined;

describe('functionName', () => {
  it('names compiled JavaScript by its function and source file', () => {
    expect(functionName('???:0x000000000d076b00 [???]', map)).toBe('next (src/api/jsonbytes.ts)');
    expect(functionName('???:0x000000000d0764c0 [???]', map)).toBe('copy (node:buffer)');
    expect(functionName('???:0x0000000001928ac0 [???]', map)).toBe('V8 Builtin: IterableToFixedArrayForWasm');
  });

  it('calls code no map names the WebAssembly scan, or what the caller says it is', () => {
    expect(functionName('???:0x00003f51e8fea01e [???]', map)).toBe('WebAssembly: the JSON scan');
    expect(functionName('???:0x00003f51e8fea01e [???]', map, 'WebAssembly: llhttp')).toBe('WebAssembly: llhttp');
  });

  it('drops C++ parameters, template arguments and return types', () => {
    expect(functionName('???:v8::internal::String::ComputeAndSetRawHash(v8::internal::SharedStringAccessGuardIfNeeded const&) [/usr/bin/node]', map)).toBe(
      'v8::internal::String::ComputeAndSetRawHash',
    );
    expect(
      functionName(
        '???:void v8::internal::MarkingVisitorBase<v8::internal::ConcurrentMarkingVisitor, v8::internal::ConcurrentMarkingState>::ProcessStrongHeapObject<v8::internal::FullHeapObjectSlot>(v8::internal::HeapObject, v8::internal::FullHeapObjectSlot, v8::internal::HeapObject) [/usr/bin/node]',
        map,
      ),
    ).toBe('v8::internal::MarkingVisitorBase::ProcessStrongHeapObject');
    expect(functionName('???:void node::Buffer::(anonymous namespace)::Fill(v8::FunctionCallbackInfo<v8::Value> const&) [/usr/bin/node]', map)).toBe('node::Buffer::{anonymous}::Fill');
    expect(functionName('???:Builtins_LoadIC [/usr/bin/node]', map)).toBe('Builtins_LoadIC');
  });

  it('marks libc by its object, not its source path', () => {
    expect(functionName('./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:__memcpy_avx_unaligned_erms [/usr/lib/x86_64-linux-gnu/libc.so.6]', map)).toBe(
      '__memcpy_avx_unaligned_erms (libc)',
    );
  });
});

describe('kindOf', () => {
  it('sorts names into the kinds the note reports', () => {
    expect(kindOf('WebAssembly: the JSON scan')).toBe('the WebAssembly scan');
    expect(kindOf('next (src/api/jsonbytes.ts)')).toBe("the gateway's JavaScript");
    expect(kindOf('copy (node:buffer)')).toBe("Node.js's JavaScript (buffer)");
    expect(kindOf('v8::internal::Scavenger::ScavengeObject')).toBe('young collections');
    expect(kindOf('v8::internal::Scavenger::EvacuateInPlaceInternalizableString')).toBe('young collections');
    expect(kindOf('v8::internal::MarkingVisitorBase::ProcessStrongHeapObject')).toBe('full collections');
    expect(kindOf('v8::internal::Sweeper::RawSweep')).toBe('full collections');
    // Called by the scavenger, not by the program.
    expect(kindOf('v8::internal::PretenuringHandler::UpdateAllocationSite')).toBe('young collections');
    expect(kindOf('v8::internal::SemiSpaceNewSpace::ShouldBePromoted')).toBe('young collections');
    expect(kindOf('v8::internal::FlatStringReader::PostGarbageCollection')).toBe('young collections');
    expect(kindOf('v8::internal::compiler::GraphReducer::ReduceTop')).toBe('compiling and interpreting');
    expect(kindOf('__memcpy_avx_unaligned_erms (libc)')).toBe('libc (memcpy)');
    expect(kindOf('Builtins_LoadIC')).toBe('V8 builtins');
    expect(kindOf('v8::internal::String::ComputeAndSetRawHash')).toBe('V8 and Node.js runtime (C++)');
  });
});

describe('functionsOfAnnotation', () => {
  it('sums self costs by name and leaves out the frames a mid-run dump charges with the whole stretch', () => {
    const text = [
      '--------------------------------------------------------------------------------',
      '151,030,735 (100.0%)  PROGRAM TOTALS',
      '--------------------------------------------------------------------------------',
      'Ir                    file:function',
      '151,030,735 (100.0%)  ./csu/../csu/libc-start.c:__libc_start_main@@GLIBC_2.34 [/usr/lib/x86_64-linux-gnu/libc.so.6]',
      // The main thread's share: the libuv pool's threads ran the rest.
      '150,912,001 (99.92%)  ???:node::SpinEventLoopInternal(node::Environment*) [/usr/bin/node]',
      '  8,937,858 ( 5.92%)  ???:Builtins_LoadIC [/usr/bin/node]',
      '  1,000,000 ( 0.66%)  ???:0x0000000000001000 [???]',
      '    500,000 ( 0.33%)  ???:0x0000000000001010 [???]',
    ].join('\n');
    const fns = functionsOfAnnotation(text, (a) => (a >= 0x1000 && a < 0x1100 ? 'JS:*handle file:///x/dist/src/server/server.js:44:20' : undefined));
    expect([...fns]).toEqual([
      ['Builtins_LoadIC', 8_937_858],
      ['handle (src/server/server.ts)', 1_500_000],
    ]);
  });
});
