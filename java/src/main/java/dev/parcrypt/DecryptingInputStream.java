package dev.parcrypt;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Reads the plaintext of an encrypted file ({@code parcrypt encrypt}'s, or this library's);
 * made by {@link Parcrypt#newDecryptingStream}. The key is checked when it opens. Only
 * authenticated bytes are ever returned: a damaged or truncated file fails with a {@link
 * ParcryptFileException} (its cause an {@link javax.crypto.AEADBadTagException}) once the
 * bytes before the damage were read.
 */
public final class DecryptingInputStream extends InputStream {
    private final FileDecryptor decryptor;
    private final MemorySegment buffer;

    DecryptingInputStream(Path source, byte[] secret, FileOptions options) throws IOException {
        this(source, secret, 0, options);
    }

    /** {@code kind}: as {@link FileArguments#FileArguments(byte[], int, FileOptions)}. */
    DecryptingInputStream(Path source, byte[] secret, int kind, FileOptions options) throws IOException {
        decryptor = new FileDecryptor(source, secret, kind, options);
        buffer = decryptor.buffer;
    }

    @Override
    public synchronized int read() throws IOException {
        open();
        long got = decryptor.read(buffer.asSlice(0, 1));
        return got == 0 ? -1 : buffer.get(ValueLayout.JAVA_BYTE, 0) & 0xff;
    }

    @Override
    public synchronized int read(byte[] data, int offset, int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, data.length);
        open();
        if (length == 0) {
            return 0;
        }
        int piece = (int) Math.min(length, buffer.byteSize());
        int got = (int) decryptor.read(buffer.asSlice(0, piece));
        if (got == 0) {
            return -1;
        }
        MemorySegment.copy(buffer, 0, MemorySegment.ofArray(data), offset, got);
        buffer.asSlice(0, got).fill((byte) 0);
        return got;
    }

    @Override
    public synchronized long skip(long count) throws IOException {
        open();
        if (count <= 0) {
            return 0;
        }
        long position = decryptor.position();
        long length = decryptor.length();
        long target = Math.min(length, position + count);
        decryptor.position(target);
        return target - position;
    }

    private void open() throws IOException {
        if (!decryptor.isOpen()) {
            throw new IOException("the decrypting stream is closed");
        }
    }

    @Override
    public synchronized void close() {
        decryptor.close();
    }

    /**
     * The file decryptor handle shared by the stream and the channel: reads at a position
     * it keeps itself (every read goes through {@code parcrypt_file_decryptor_read_at}), and
     * the plaintext memory its owner reads through, wiped when it closes.
     */
    static final class FileDecryptor implements AutoCloseable {
        /**
         * Plaintext on its way to a Java array or heap buffer; freed by the garbage
         * collector, so a stream or channel dropped unclosed leaks nothing.
         */
        final MemorySegment buffer = Arena.ofAuto().allocate(1 << 20);
        private final NativeHandle handle;
        private final Cleaner.Cleanable cleanable;
        private long position;
        private long length = -1;

        FileDecryptor(Path source, byte[] secret, int kind, FileOptions options) throws IOException {
            MemorySegment pointer;
            try (FileArguments arguments = new FileArguments(secret, kind, options)) {
                MemorySegment from = arguments.path(source);
                pointer = Errors.handle(NativeCall.run(Errors::checkFile, s -> (int) Native.FILE_DECRYPTOR_OPEN
                        .invokeExact(arguments.engine, from, arguments.secret, arguments.secret.byteSize(),
                                arguments.context, arguments.context.byteSize(), arguments.flags,
                                Errors.handleSlot(s), Errors.errorSlot(s))));
            }
            handle = new NativeHandle(pointer, Native.FILE_DECRYPTOR_FREE, "file decryptor");
            cleanable = handle.register(this);
        }

        /** Reads at the position into native memory; advances; 0 only at the end. */
        synchronized long read(MemorySegment into) throws IOException {
            long from = position;
            long got = Errors.size(NativeCall.on(handle, this, Errors::checkFile, (pointer, s) -> (int) Native
                    .FILE_DECRYPTOR_READ_AT.invokeExact(pointer, from, into, into.byteSize(), Errors.sizeSlot(s),
                            Errors.errorSlot(s))));
            position += got;
            return got;
        }

        /** The plaintext's length; authenticates the final chunk first (a cut file fails here). */
        synchronized long length() throws IOException {
            if (length >= 0) {
                return length;
            }
            length = Errors.size(NativeCall.on(handle, this, Errors::checkFile, (pointer, s) -> (int) Native
                    .FILE_DECRYPTOR_LENGTH.invokeExact(pointer, Errors.sizeSlot(s), Errors.errorSlot(s))));
            return length;
        }

        synchronized long position() {
            return position;
        }

        synchronized void position(long position) {
            if (position < 0) {
                throw new IllegalArgumentException("negative position " + position);
            }
            this.position = position;
        }

        boolean isOpen() {
            return handle.isOpen();
        }

        /** Frees the handle (once the calls in progress end) and wipes the buffer. */
        @Override
        public void close() {
            if (isOpen()) {
                cleanable.clean();
                buffer.fill((byte) 0);
            }
        }
    }
}
