package dev.parcrypt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The native arguments of one file call (the engine, the secret, the context, paths) in an
 * arena the call closes; the secret's copy is wiped on close.
 */
final class FileArguments implements AutoCloseable {
    final Arena arena = Arena.ofConfined();
    final MemorySegment engine;
    final MemorySegment secret;
    final MemorySegment context;
    final int flags;

    FileArguments(byte[] secret, FileOptions options) {
        this(secret, 0, options);
    }

    /**
     * @param kind what the secret is beyond what the options say: 0, {@link
     *     Native#FILE_RECIPIENTS} (recipients file text) or {@link Native#FILE_IDENTITIES}
     *     (identity file text); the library refuses it with a passphrase
     */
    FileArguments(byte[] secret, int kind, FileOptions options) {
        Objects.requireNonNull(secret, "secret");
        Objects.requireNonNull(options, "options");
        this.engine = Engines.of(options.backend().engineName, options.backend().threads);
        this.secret = arena.allocate(Math.max(secret.length, 1)).asSlice(0, secret.length);
        MemorySegment.copy(MemorySegment.ofArray(secret), 0, this.secret, 0, secret.length);
        byte[] context = options.context();
        if (context == null || context.length == 0) {
            this.context = MemorySegment.NULL;
        } else {
            this.context = arena.allocate(context.length);
            MemorySegment.copy(MemorySegment.ofArray(context), 0, this.context, 0, context.length);
        }
        this.flags = options.flags() | kind;
    }

    MemorySegment path(Path path) {
        Objects.requireNonNull(path, "path");
        return arena.allocateFrom(path.toString());
    }

    @Override
    public void close() {
        secret.fill((byte) 0);
        arena.close();
    }
}
