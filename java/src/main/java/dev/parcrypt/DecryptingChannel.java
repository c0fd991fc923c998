package dev.parcrypt;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Path;

/**
 * Random access to an encrypted file's plaintext; made by {@link
 * Parcrypt#openDecryptingChannel}. A read opens and authenticates only the chunks under
 * it; no byte of a chunk that failed is returned. {@link #size()} authenticates the final
 * chunk first, so a cut file fails there rather than looking shorter. Read-only. Calls
 * take turns.
 */
public final class DecryptingChannel implements SeekableByteChannel {
    private final DecryptingInputStream.FileDecryptor decryptor;
    private final MemorySegment buffer;

    DecryptingChannel(Path source, byte[] secret, FileOptions options) throws IOException {
        this(source, secret, 0, options);
    }

    /** {@code kind}: as {@link FileArguments#FileArguments(byte[], int, FileOptions)}. */
    DecryptingChannel(Path source, byte[] secret, int kind, FileOptions options) throws IOException {
        decryptor = new DecryptingInputStream.FileDecryptor(source, secret, kind, options);
        buffer = decryptor.buffer;
    }

    @Override
    public synchronized int read(ByteBuffer destination) throws IOException {
        open();
        if (destination.isReadOnly()) {
            throw new IllegalArgumentException("the destination buffer is read-only");
        }
        int wanted = destination.remaining();
        if (wanted == 0) {
            return 0;
        }
        long got;
        if (destination.isDirect()) {
            got = decryptor.read(MemorySegment.ofBuffer(destination));
        } else {
            MemorySegment piece = buffer.asSlice(0, Math.min(wanted, buffer.byteSize()));
            got = decryptor.read(piece);
            MemorySegment.copy(buffer, 0, MemorySegment.ofBuffer(destination), 0, got);
            piece.fill((byte) 0);
        }
        if (got == 0) {
            return -1;
        }
        destination.position(destination.position() + (int) got);
        return (int) got;
    }

    @Override
    public int write(ByteBuffer source) {
        throw new NonWritableChannelException();
    }

    @Override
    public synchronized long position() throws IOException {
        open();
        return decryptor.position();
    }

    @Override
    public synchronized DecryptingChannel position(long position) throws IOException {
        open();
        decryptor.position(position);
        return this;
    }

    @Override
    public synchronized long size() throws IOException {
        open();
        return decryptor.length();
    }

    @Override
    public SeekableByteChannel truncate(long size) {
        throw new NonWritableChannelException();
    }

    @Override
    public synchronized boolean isOpen() {
        return decryptor.isOpen();
    }

    private void open() throws IOException {
        if (!decryptor.isOpen()) {
            throw new ClosedChannelException();
        }
    }

    @Override
    public synchronized void close() {
        decryptor.close();
    }
}
