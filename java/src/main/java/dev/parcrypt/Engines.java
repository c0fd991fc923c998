package dev.parcrypt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The native engines, one per backend name and thread count, made on first use and kept
 * for the life of the JVM: an engine owns threads (or a device), which every cipher and
 * file on that backend shares.
 */
final class Engines {
    private Engines() {}

    private static final ConcurrentHashMap<String, MemorySegment> ENGINES = new ConcurrentHashMap<>();

    static MemorySegment of(String name, int threads) {
        String key = name + "/" + threads;
        MemorySegment engine = ENGINES.get(key);
        if (engine != null) {
            return engine;
        }
        return ENGINES.computeIfAbsent(key, unused -> make(name, threads));
    }

    private static MemorySegment make(String name, int threads) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nameSegment = arena.allocateFrom(name);
            return Errors.handle(NativeCall.run(Errors::check, s -> (int) Native.ENGINE_NEW.invokeExact(
                    nameSegment, (long) threads, Errors.handleSlot(s), Errors.errorSlot(s))));
        }
    }
}
