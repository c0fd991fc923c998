package dev.parcrypt;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.file.Path;

/**
 * Writes an encrypted file, byte-compatible with {@code parcrypt encrypt}, from plaintext
 * written piece by piece; made by {@link Parcrypt#newEncryptingStream}. The file appears at
 * its name only when {@link #close()} succeeds; a stream that failed, was {@linkplain
 * #abort() aborted} or was dropped unclosed leaves no file. Calls take turns (they are
 * synchronized).
 */
public final class EncryptingOutputStream extends OutputStream {
    /** Plaintext is gathered here and handed to the library a buffer at a time. */
    private static final int BUFFER_BYTES = 1 << 20;

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;
    // Freed by the garbage collector, so a stream dropped unclosed leaks nothing.
    private final Arena arena = Arena.ofAuto();
    private final MemorySegment buffer = arena.allocate(BUFFER_BYTES);
    private int buffered;
    private boolean failed;
    private boolean closed;

    EncryptingOutputStream(Path destination, byte[] secret, FileOptions options) throws IOException {
        this(destination, secret, 0, options);
    }

    /** {@code kind}: as {@link FileArguments#FileArguments(byte[], int, FileOptions)}. */
    EncryptingOutputStream(Path destination, byte[] secret, int kind, FileOptions options) throws IOException {
        Warnings.install();
        MemorySegment pointer;
        try (FileArguments arguments = new FileArguments(secret, kind, options)) {
            MemorySegment to = arguments.path(destination);
            pointer = Errors.handle(NativeCall.run(Errors::checkFile, s -> (int) Native.FILE_ENCRYPTOR_NEW.invokeExact(
                    arguments.engine, to, arguments.secret, arguments.secret.byteSize(), arguments.context,
                    arguments.context.byteSize(), arguments.flags, Errors.handleSlot(s), Errors.errorSlot(s))));
        }
        handle = new NativeHandle(pointer, Native.FILE_ENCRYPTOR_FREE, "file encryptor");
        cleanable = handle.register(this);
    }

    @Override
    public synchronized void write(int b) throws IOException {
        open();
        if (buffered == BUFFER_BYTES) {
            flushBuffer();
        }
        buffer.set(java.lang.foreign.ValueLayout.JAVA_BYTE, buffered++, (byte) b);
    }

    @Override
    public synchronized void write(byte[] data, int offset, int length) throws IOException {
        java.util.Objects.checkFromIndexSize(offset, length, data.length);
        open();
        while (length > 0) {
            if (buffered == BUFFER_BYTES) {
                flushBuffer();
            }
            int piece = Math.min(length, BUFFER_BYTES - buffered);
            MemorySegment.copy(MemorySegment.ofArray(data), offset, buffer, buffered, piece);
            buffered += piece;
            offset += piece;
            length -= piece;
        }
    }

    /** Hands the gathered plaintext to the library (the file still appears only on close). */
    @Override
    public synchronized void flush() throws IOException {
        open();
        flushBuffer();
    }

    private void flushBuffer() throws IOException {
        if (buffered == 0) {
            return;
        }
        long length = buffered;
        try {
            NativeCall.on(handle, this, Errors::checkFile, (pointer, s) -> (int) Native.FILE_ENCRYPTOR_WRITE
                    .invokeExact(pointer, buffer, length, Errors.errorSlot(s)));
        } catch (IOException | RuntimeException e) {
            // The library refuses every later call on a failed encryptor: so does this stream.
            failed = true;
            throw e;
        } finally {
            buffer.asSlice(0, length).fill((byte) 0);
            buffered = 0;
        }
    }

    private void open() throws IOException {
        if (closed) {
            throw new IOException("the encrypting stream is closed");
        }
        if (failed) {
            throw new IOException("an earlier write failed: this stream makes no file");
        }
    }

    /**
     * Seals the last chunk and gives the file its name. After a failure nothing is made and
     * nothing is thrown again.
     */
    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        try {
            if (!failed) {
                flushBuffer();
                NativeCall.on(handle, this, Errors::checkFile, (pointer, s) -> (int) Native.FILE_ENCRYPTOR_FINISH
                        .invokeExact(pointer, Errors.errorSlot(s)));
            }
        } finally {
            closed = true;
            release();
        }
    }

    /** Drops what was written: no file appears. */
    public synchronized void abort() {
        if (!closed) {
            closed = true;
            release();
        }
    }

    private void release() {
        cleanable.clean();
        buffer.fill((byte) 0);
        Reference.reachabilityFence(this);
    }
}
