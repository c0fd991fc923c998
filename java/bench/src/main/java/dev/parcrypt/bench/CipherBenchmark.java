package dev.parcrypt.bench;

import dev.parcrypt.Backend;
import dev.parcrypt.Cipher;
import dev.parcrypt.Parcrypt;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.bouncycastle.crypto.engines.AESEngine;
import org.bouncycastle.crypto.modes.CTRModeCipher;
import org.bouncycastle.crypto.modes.GCMBlockCipher;
import org.bouncycastle.crypto.modes.GCMModeCipher;
import org.bouncycastle.crypto.modes.SICBlockCipher;
import org.bouncycastle.crypto.params.AEADParameters;
import org.bouncycastle.crypto.params.KeyParameter;
import org.bouncycastle.crypto.params.ParametersWithIV;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One message of {@code size} bytes encrypted per operation, from one byte[] into another,
 * under a fresh IV each time (javax.crypto refuses to repeat a GCM IV, and every
 * implementation here is held to the same rule). GB/s = operations per second x size.
 *
 * <ul>
 *   <li>parcrypt-pool: the engine's pool (the caller and its threads take work items in turn; one thread per core), in the library;
 *   <li>parcrypt-seq: the engine on the calling thread (one core);
 *   <li>java-threads: seed S0's static split over one new Thread per core, each segment a
 *       call into the library's one-thread kernel;
 *   <li>fork-join: seed S0's RecursiveAction halving to 256 KiB on the common pool, same kernel;
 *   <li>javax: the JDK's own provider (SunJCE), one thread;
 *   <li>bouncycastle: Bouncy Castle's lightweight API (bcprov-jdk18on), one thread.
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class CipherBenchmark {
    @Param({"aes-128-ctr", "aes-128-gcm"})
    public String suite;

    @Param({"1024", "1048576", "67108864", "268435456"})
    public int size;

    @Param({"parcrypt-pool", "parcrypt-seq", "java-threads", "fork-join", "javax", "bouncycastle"})
    public String implementation;

    private byte[] key;
    private byte[] iv;
    private byte[] input;
    private byte[] output;
    private long counter;
    private boolean gcm;

    private Cipher parcrypt;
    private javax.crypto.Cipher jce;
    private SecretKeySpec jceKey;
    private GCMModeCipher bcGcm;
    private CTRModeCipher bcCtr;
    private KeyParameter bcKey;

    @Setup
    public void setUp() throws Exception {
        SplittableRandom random = new SplittableRandom(1);
        key = new byte[16];
        random.nextBytes(key);
        gcm = suite.endsWith("gcm");
        iv = new byte[gcm ? 12 : 16];
        input = new byte[size];
        random.nextBytes(input);
        output = new byte[size + 16];
        int cores = Runtime.getRuntime().availableProcessors();
        switch (implementation) {
            case "parcrypt-pool" -> parcrypt = Parcrypt.cipher(suite, key, null, Backend.pool());
            case "parcrypt-seq" -> parcrypt = Parcrypt.cipher(suite, key, null, Backend.seq());
            case "java-threads" -> parcrypt = Parcrypt.cipher(suite, key, null, Backend.javaThreads(cores));
            case "fork-join" -> parcrypt = Parcrypt.cipher(suite, key, null, Backend.forkJoin());
            case "javax" -> {
                jce = javax.crypto.Cipher.getInstance(gcm ? "AES/GCM/NoPadding" : "AES/CTR/NoPadding");
                jceKey = new SecretKeySpec(key, "AES");
            }
            case "bouncycastle" -> {
                bcKey = new KeyParameter(key);
                if (gcm) {
                    bcGcm = GCMBlockCipher.newInstance(AESEngine.newInstance());
                } else {
                    bcCtr = SICBlockCipher.newInstance(AESEngine.newInstance());
                }
            }
            default -> throw new IllegalArgumentException("unknown implementation " + implementation);
        }
        // The JIT first: javax.crypto's CTR ran at 0.4-0.5 GB/s for its first 4 seconds of
        // 1 MiB messages here, then at over 40 (its intrinsic compiled): JMH's two 1-second
        // warm-up iterations are not enough on this 2-core machine. Six seconds of messages of
        // at most 1 MiB compile every implementation's path before any iteration.
        int warmLength = Math.min(size, 1 << 20);
        long began = System.nanoTime();
        while (System.nanoTime() - began < 6_000_000_000L) {
            encrypt(warmLength);
        }
    }

    @TearDown
    public void tearDown() {
        if (parcrypt != null) {
            parcrypt.close();
        }
    }

    private byte[] nextIv() {
        ByteBuffer.wrap(iv).putLong(4, ++counter);
        return iv;
    }

    @Benchmark
    public long encrypt() throws Exception {
        return encrypt(size);
    }

    private long encrypt(int length) throws Exception {
        byte[] nonce = nextIv();
        switch (implementation) {
            case "javax" -> {
                if (gcm) {
                    jce.init(javax.crypto.Cipher.ENCRYPT_MODE, jceKey, new GCMParameterSpec(128, nonce));
                } else {
                    jce.init(javax.crypto.Cipher.ENCRYPT_MODE, jceKey, new IvParameterSpec(nonce));
                }
                return jce.doFinal(input, 0, length, output, 0);
            }
            case "bouncycastle" -> {
                if (gcm) {
                    bcGcm.init(true, new AEADParameters(bcKey, 128, nonce.clone()));
                    int written = bcGcm.processBytes(input, 0, length, output, 0);
                    return written + bcGcm.doFinal(output, written);
                }
                bcCtr.init(true, new ParametersWithIV(bcKey, nonce.clone()));
                return bcCtr.processBytes(input, 0, length, output, 0);
            }
            default -> {
                return parcrypt.encryptWithIv(nonce, MemorySegment.ofArray(input).asSlice(0, length), MemorySegment.ofArray(output), null);
            }
        }
    }
}
