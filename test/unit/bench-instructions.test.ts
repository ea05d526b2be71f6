// The names scenario 5's instruction count gives callgrind's functions (test/bench/scenarios/instructions.ts):
// the report lists them, so they must not carry addresses, argument lists or build paths.

import { describe, expect, it } from 'vitest';
import { dumpCosts, functionName, kindOf } from '../bench/scenarios/instructions.js';

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

describe('dumpCosts', () => {
  // A dump as callgrind writes it: main on the stack throughout (charged with the whole stretch), a JavaScript
  // function calling a builtin, memcpy and the write barrier, a scavenge run from a task that also calls memcpy, and
  // an optimizing compile.
  const text = [
    '# callgrind format',
    'version: 1',
    'positions: line',
    'events: Ir',
    'summary: 10000',
    '',
    'ob=(1) /usr/bin/node',
    'fl=(1) ???',
    'fn=(1) main',
    '0 9500',
    'cfn=(2) 0x0000000000001000',
    'calls=1 0',
    '0 3000',
    'cfn=(6) v8::internal::MinorGCJob::Task::RunInternal()',
    'calls=1 0',
    '0 1400',
    'cfn=(9) v8::internal::Runtime_CompileOptimized(int, unsigned long*, v8::internal::Isolate*)',
    'calls=1 0',
    '0 500',
    '',
    'ob=(2) ???',
    'fn=(2)',
    '0 1000',
    'cob=(1)',
    'cfn=(3) Builtins_LoadIC',
    'calls=10 0',
    '0 800',
    'cob=(3) /usr/lib/x86_64-linux-gnu/libc.so.6',
    'cfn=(4) __memcpy_avx_unaligned_erms',
    'calls=5 0',
    '0 300',
    'cob=(1)',
    'cfn=(5) v8::internal::Heap::GenerationalBarrierSlow(v8::internal::HeapObject, unsigned long, v8::internal::HeapObject)',
    'calls=3 0',
    '0 200',
    '',
    'ob=(1)',
    'fn=(3)',
    '0 800',
    'fn=(5)',
    '0 200',
    'fn=(6)',
    '0 100',
    'cfn=(7) v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)',
    'calls=1 0',
    '0 1300',
    'fn=(7)',
    '0 100',
    'cfn=(8) heap::base::SlotCallbackResult v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>(v8::internal::FullHeapObjectSlot, v8::internal::HeapObject)',
    'calls=50 0',
    '0 1200',
    'fn=(8)',
    '0 300',
    'cob=(3)',
    'cfn=(4)',
    'calls=50 0',
    '0 900',
    'fn=(9)',
    '0 100',
    'cfn=(10) v8::internal::compiler::GraphReducer::ReduceTop()',
    'calls=1 0',
    '0 400',
    'fn=(10)',
    '0 400',
    '',
    'ob=(3)',
    'fn=(4)',
    '0 1200',
  ].join('\n');
  const costs = dumpCosts(text, (a) => (a >= 0x1000 && a < 0x1100 ? 'JS:*handle file:///x/dist/src/server/server.js:44:20' : undefined));

  it('sums self costs by name and leaves out the frames a mid-run dump charges with the whole stretch', () => {
    expect(Object.fromEntries(costs.fns)).toEqual({
      'handle (src/server/server.ts)': 1000,
      Builtins_LoadIC: 800,
      'v8::internal::Heap::GenerationalBarrierSlow': 200,
      'v8::internal::MinorGCJob::Task::RunInternal': 100,
      'v8::internal::Heap::CollectGarbage': 100,
      'v8::internal::Scavenger::ScavengeObject': 300,
      'v8::internal::Runtime_CompileOptimized': 100,
      'v8::internal::compiler::GraphReducer::ReduceTop': 400,
      '__memcpy_avx_unaligned_erms (libc)': 1200,
    });
  });

  it('sorts work by where it ran: under a collection or a compilation it is theirs, whatever its name', () => {
    expect(Object.fromEntries(costs.kinds)).toEqual({
      "the gateway's JavaScript": 1000,
      'V8 builtins': 800,
      // The write barrier runs in the program, not in a collection.
      'V8 and Node.js runtime (C++)': 200,
      // The task, the collection, the scavenger and memcpy's share called from it: 900 of memcpy's 1,200.
      'young collections': 100 + 100 + 300 + 900,
      'compiling and interpreting': 100 + 400,
      'libc (memcpy)': 300,
    });
  });
});
