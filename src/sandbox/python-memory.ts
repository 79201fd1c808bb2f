/**
 * The python runner's memory cap in a container or a pod: its own, as arguments
 * (Node's is NODE_OPTIONS). Its command is the image's (pythonImageCommand).
 */

/**
 * Share of a container's memory limit the python runner caps its data segment at
 * (RLIMIT_DATA, and its address space beyond what it mapped at start: RLIMIT_AS,
 * so that shared mappings stop there too). Larger than V8's heap share: the cap counts nearly all of a
 * Python's memory (its heap, every thread's stack), where V8's counts the old
 * space only; a script that fills it still stops on the cap (`heap-limit`)
 * before the kernel's OOM kill.
 */
export const PYTHON_MEMORY_SHARE = 0.75;

/** The runner's `--memory-mb` for a container or pod of `memoryMb`. */
export function pythonMemoryArgs(memoryMb: number): string[] {
  return ['--memory-mb', String(Math.max(16, Math.floor(memoryMb * PYTHON_MEMORY_SHARE)))];
}
