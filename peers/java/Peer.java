// One harness of `parcrypt-lab --peers` (protocol: peers/README.md): javax.crypto as the
// JDK ships it (the SunJCE provider).
//
//   java Peer CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS
//
// Each thread has its own Cipher object (they are not thread-safe) and the one SecretKeySpec;
// per message Cipher.init with a fresh GCMParameterSpec / IvParameterSpec (SunJCE keeps the
// expanded key when the key is unchanged) and doFinal from the input array into the output
// array. SunJCE refuses to encrypt twice under one GCM key and IV: the protocol's fresh IV
// per message satisfies it.
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.CyclicBarrier;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public final class Peer {
    /** Kept reachable so that the collector does not reclaim (and close up) the room. */
    static byte[][] keptSpacers;

    static final int TAG = 16;
    static boolean gcm;
    static boolean encrypt;

    static void fail(int code, String message) {
        System.err.println("error: " + message);
        System.exit(code);
    }

    static Cipher newCipher() throws Exception {
        return Cipher.getInstance(gcm ? "AES/GCM/NoPadding" : "AES/CTR/NoPadding");
    }

    /** One message from in to out under iv; false when a GCM tag does not verify. */
    static boolean message(Cipher cipher, SecretKeySpec key, boolean enc, byte[] iv, byte[] in,
                           int inLength, byte[] out) {
        try {
            int mode = enc ? Cipher.ENCRYPT_MODE : Cipher.DECRYPT_MODE;
            if (gcm) cipher.init(mode, key, new GCMParameterSpec(TAG * 8, iv));
            else cipher.init(mode, key, new IvParameterSpec(iv));
            cipher.doFinal(in, 0, inLength, out, 0);
            return true;
        } catch (javax.crypto.AEADBadTagException e) {
            return false;
        } catch (Exception e) {
            fail(1, e.toString());
            return false;
        }
    }

    /** NIST GCM test cases 2 and 14; SP 800-38A F.5.1 and F.5.5 (first block). */
    static boolean knownAnswer(int keyBytes) throws Exception {
        HexFormat hex = HexFormat.of();
        byte[] key, iv, plain, expected;
        if (gcm) {
            key = new byte[keyBytes];
            iv = new byte[12];
            plain = new byte[16];
            expected = hex.parseHex(keyBytes == 16
                ? "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"
                : "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919");
        } else {
            key = hex.parseHex(keyBytes == 16 ? "2b7e151628aed2a6abf7158809cf4f3c"
                : "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
            iv = hex.parseHex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
            plain = hex.parseHex("6bc1bee22e409f96e93d7e117393172a");
            expected = hex.parseHex(keyBytes == 16 ? "874d6191b620e3261bef6864990db6ce"
                : "601ec313775789a5b7a7f504bbf3d228");
        }
        SecretKeySpec spec = new SecretKeySpec(key, "AES");
        Cipher cipher = newCipher();
        byte[] out = new byte[expected.length];
        if (!message(cipher, spec, true, iv, plain, plain.length, out) || !Arrays.equals(out, expected))
            return false;
        byte[] back = new byte[16];
        return message(cipher, spec, false, iv, expected, expected.length, back)
            && Arrays.equals(back, plain);
    }

    static void jitWarmUp(SecretKeySpec key, int size) throws Exception {
        Cipher cipher = newCipher();
        byte[] plain = new byte[Math.min(Math.max(size, 16), 64 << 10)], sealed = new byte[plain.length + TAG], back = new byte[plain.length + TAG];
        byte[] iv = new byte[gcm ? 12 : 16];
        long began = System.nanoTime();
        for (long index = 1; System.nanoTime() - began < 1_000_000_000L; index++) {
            ByteBuffer.wrap(iv).putLong(4, index);
            if (!message(cipher, key, true, iv, plain, plain.length, sealed)
                || !message(cipher, key, false, iv, sealed, plain.length + (gcm ? TAG : 0), back))
                fail(1, "warm-up failed");
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) fail(1, "usage: Peer CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS");
        String name = args[0];
        int keyBytes;
        switch (name) {
            case "aes-128-gcm": gcm = true; keyBytes = 16; break;
            case "aes-256-gcm": gcm = true; keyBytes = 32; break;
            case "aes-128-ctr": gcm = false; keyBytes = 16; break;
            case "aes-256-ctr": gcm = false; keyBytes = 32; break;
            default: fail(1, "unknown cipher " + name); return;
        }
        if (!args[1].equals("encrypt") && !args[1].equals("decrypt")) fail(1, "unknown direction " + args[1]);
        encrypt = args[1].equals("encrypt");
        int size = 0, threads = 0, runs = 0;
        double minSeconds = 0;
        try {
            size = Integer.parseInt(args[2]);
            threads = Integer.parseInt(args[3]);
            runs = Integer.parseInt(args[4]);
            minSeconds = Double.parseDouble(args[5]);
        } catch (NumberFormatException e) {
            fail(1, "BYTES, THREADS, RUNS and MIN_SECONDS are numbers");
        }
        if (size < 0 || size > Integer.MAX_VALUE - 64 || threads < 1 || runs < 1) fail(1, "bad numbers");
        if (!knownAnswer(keyBytes)) fail(2, "known-answer test failed");

        byte[] keyBytesArray = new byte[keyBytes];
        for (int i = 0; i < keyBytes; i++) keyBytesArray[i] = (byte) i;
        SecretKeySpec key = new SecretKeySpec(keyBytesArray, "AES");
        int tag = gcm ? TAG : 0;
        byte[] fixedIv = new byte[gcm ? 12 : 16];
        Arrays.fill(fixedIv, (byte) 0x5a);
        int n = threads;
        byte[][] ins = new byte[n][], outs = new byte[n][], spacers = new byte[n][];
        Cipher[] ciphers = new Cipher[n];
        for (int t = 0; t < n; t++) {
            byte[] plain = new byte[size];
            for (int i = 0; i < size; i++) plain[i] = (byte) (i * 31);
            ciphers[t] = newCipher();
            ins[t] = plain;
            if (gcm && !encrypt) {
                byte[] sealed = new byte[size + TAG];
                if (!message(ciphers[t], key, true, fixedIv, plain, size, sealed)) fail(1, "could not seal");
                ins[t] = sealed;
            }
            outs[t] = new byte[size + tag];
            Arrays.fill(outs[t], (byte) 0x11);
            // 4 KiB of room after each thread's buffers, as every harness leaves: arrays
            // allocated one after another could share a cache line or prefetched pair.
            spacers[t] = new byte[4096];
        }
        keptSpacers = spacers;
        // Encryption may not repeat an IV: runs go on numbering messages where the last stopped.
        long[] next = new long[n];

        final int threadCount = n;
        java.util.function.LongToDoubleFunction run = count -> {
            CyclicBarrier start = new CyclicBarrier(threadCount + 1);
            Thread[] workers = new Thread[threadCount];
            for (int t = 0; t < threadCount; t++) {
                final int id = t;
                workers[t] = new Thread(() -> {
                    byte[] iv = fixedIv.clone();
                    ByteBuffer counter = ByteBuffer.wrap(iv, 4, 8);
                    try { start.await(); } catch (Exception e) { fail(1, e.toString()); }
                    for (long index = 0; index < count; index++) {
                        if (encrypt || !gcm) {
                            iv[0] = (byte) id;
                            counter.putLong(4, next[id]++);
                        }
                        if (!message(ciphers[id], key, encrypt, iv, ins[id], ins[id].length, outs[id]))
                            fail(1, "a tag did not verify");
                    }
                });
                workers[t].start();
            }
            try {
                start.await();
                long began = System.nanoTime();
                for (Thread worker : workers) worker.join();
                return (System.nanoTime() - began) * 1e-9;
            } catch (Exception e) {
                fail(1, e.toString());
                return 0;
            }
        };
        // The JIT compiles the cipher code first: at least a second of messages of this size
        // (at most 64 KiB)
        // (sealed, then opened) before the calibration, so that a large message is never
        // timed in the interpreter. The calibration then doubles, as in every harness.
        jitWarmUp(key, size);
        long count = 1;
        while (run.applyAsDouble(count) < minSeconds) count *= 2;
        StringBuilder seconds = new StringBuilder();
        for (int r = 0; r < runs; r++) {
            if (r > 0) seconds.append(',');
            seconds.append(String.format("%.9f", run.applyAsDouble(count)));
        }
        System.out.printf("{\"peer\":\"java\",\"library\":\"Java %s javax.crypto\",\"cipher\":\"%s\","
            + "\"direction\":\"%s\",\"bytes\":%d,\"threads\":%d,\"messages\":%d,\"seconds\":[%s]}%n",
            System.getProperty("java.version"), name, args[1], size, threads, count, seconds);
    }
}
