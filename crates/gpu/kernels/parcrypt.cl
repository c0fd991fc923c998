/* parcrypt kernels: AES-128/192/256, Blowfish and RC6-32/20 in ECB, CTR (over one range or
 * over many segments, each with its own counter) and CBC decryption, and GHASH partial sums
 * for GCM.
 *
 * One source text for every compiler. The host puts vendor_opencl.h (OpenCL C 1.2) or
 * vendor_cuda.h (NVRTC) in front of it; this file only uses the names those headers define
 * (KERNEL, GLOBAL, LOCAL, CONSTANT, RESTRICT, DEVICE_FUNCTION, DECLARE_SHARED_WORDS,
 * DECLARE_STATIC_SHARED_WORDS,
 * LOCAL_ID, GROUP_SIZE, GLOBAL_ID, GLOBAL_SIZE, BARRIER, MAKE_U32X2, MAKE_U32X4,
 * ROTATE_LEFT32, ROTATE_RIGHT32, SWAP_BYTES32, UNROLL, HIDE_FROM_OPTIMIZER,
 * TABLE_OFFSET256, u8, u32, u64, u32x2, u32x4), never a
 * built-in of either platform, and it is C that both compile (no C++ features, no OpenCL
 * vector operators).
 *
 * WHAT IS AND IS NOT CONSTANT TIME
 *
 * T-table AES and Blowfish look tables up at indices that depend on the data and the key.
 * On a GPU the tables sit in local (shared) memory, which is split into 32 banks of 4-byte
 * words; when lanes of one warp hit different words of the same bank, the access is
 * replayed, and the number of replays (visible in the kernel's run time) tells an attacker
 * which indices collided. That is a known key-recovery channel for GPU AES.
 *
 * Closed here: with TABLE_COPIES = 32 every table is stored 32 times interleaved, entry e
 * of copy c at word e * 32 + c, and lane l of a warp reads only copy l % 32. Word
 * e * 32 + l lies in bank l whatever e is, so the 32 lanes of a warp always hit 32 distinct
 * banks: a lookup costs the same for every index, and the bank-conflict channel is gone.
 *
 * Not closed:
 * - With fewer than 32 copies (chosen when the device's local memory is too small: 32
 *   copies take 64 KiB for AES encryption and 72 KiB for decryption, which keep two
 *   tables per copy, and 128 KiB for Blowfish; so e.g. every table on a 48 KiB OpenCL
 *   device), lanes l and l + copies share a copy and can conflict: the channel is
 *   narrowed, not closed. The host reports the copy counts it chose. CUDA hosts opt in to
 *   the GPU's whole shared memory per block (227 KiB on Hopper), where all 32 fit.
 * - On devices whose "local memory" is ordinary cached memory (CPU OpenCL such as PoCL,
 *   some integrated GPUs) table lookups leak through the data cache exactly as CPU T-table
 *   AES does; there the host uses one copy, since replication buys nothing. Do not use
 *   these kernels on a CPU device where other, untrusted code shares the caches.
 * - AMD wavefronts of 64 lanes: lanes l and l + 32 read the same copy; the LDS serves a
 *   wavefront in two halves of 32 lanes, so this should not conflict, but it is not verified.
 * - RC6 uses no tables. Its data-dependent rotations are single funnel-shift / rotate
 *   instructions and its multiplications are fixed-latency on the GPUs we know of; RC6
 *   is as constant time as the hardware's rotate and multiply.
 * - Global memory traffic, the counter arithmetic and the branch structure depend only on
 *   public sizes and positions, never on data or key.
 * - Round keys sit in device memory for the duration of a call (the host overwrites them
 *   afterwards); the key-dependent Blowfish S-boxes copied into local memory are wiped by
 *   each work-group before it ends. Registers cannot be wiped from here.
 *
 * DATA LAYOUT
 * - AES state: four big-endian column words (byte 0 of a column in the top bits), as in
 *   parcrypt-ciphers' ReferenceAes, whose tables and schedules the host uploads.
 * - Blowfish: two big-endian words. RC6: four little-endian words (loaded as they are).
 * - Blocks are loaded as u32x2 / u32x4 in the device's byte order, which the host checks
 *   is little-endian; SWAP_BYTES32 turns them into big-endian words where the cipher says so.
 * - CTR counters arrive as big-endian words, most significant first (x, y, z, w), already
 *   advanced by the host to the first block of this launch; block i of the launch uses
 *   counter + i under the rule COUNTER_RULE_FULL (wraps at the block width) or
 *   COUNTER_RULE_LOW32 (GCM's inc32: only the last word counts).
 * - Segmented CTR (the *_ctr_segments kernels, many short messages such as the 16 KiB
 *   chunks of a Cobblestone file in one launch): the launch's blocks are cut into
 *   consecutive segments of `blocks_per_segment` blocks (the last may be shorter), and
 *   segment s starts from its own counter block, counters[s]. Those are in memory byte
 *   order, as the host holds the counter blocks (bytes, most significant first), so they
 *   are loaded like data and byte-swapped into big-endian words; block b of the launch
 *   then uses counters[b / blocks_per_segment] + b % blocks_per_segment under the rule.
 * - CBC decryption reads ciphertext from `input` and writes plaintext to a separate
 *   `output`, so block i can read ciphertext block i - 1 whatever other threads do.
 *
 * IN PLACE: for ECB and CTR the host may pass one buffer as both `input` and `output` (CUDA
 *   device buffers, foreign arrays); each thread reads block i before it writes block i.
 *   The data pointers therefore carry no RESTRICT, which would promise the compiler that
 *   they never alias (undefined behaviour in place). Round keys, tables and counter blocks
 *   are never written by a kernel and keep RESTRICT (a read-only, non-coherent load path).
 *
 * LAUNCH GEOMETRY is the host's choice: any one-dimensional group size and grid. Every
 * kernel copies its tables cooperatively, waits at a barrier that every thread reaches, then
 * walks the blocks in a grid-stride loop, so a smaller grid simply gives each thread more
 * blocks.
 */

#ifndef AES_ENCRYPT_TABLE_COPIES
#define AES_ENCRYPT_TABLE_COPIES 32
#endif
#ifndef AES_DECRYPT_TABLE_COPIES
#define AES_DECRYPT_TABLE_COPIES 32
#endif
#ifndef BLOWFISH_TABLE_COPIES
#define BLOWFISH_TABLE_COPIES 32
#endif

/* Copies must be powers of two up to 32: lane % copies is then a mask, and with 32 each
 * lane has its own bank. */
#if AES_ENCRYPT_TABLE_COPIES < 1 || AES_ENCRYPT_TABLE_COPIES > 32 \
    || (AES_ENCRYPT_TABLE_COPIES & (AES_ENCRYPT_TABLE_COPIES - 1)) != 0
#error "AES_ENCRYPT_TABLE_COPIES must be 1, 2, 4, 8, 16 or 32"
#endif
#if AES_DECRYPT_TABLE_COPIES < 1 || AES_DECRYPT_TABLE_COPIES > 32 \
    || (AES_DECRYPT_TABLE_COPIES & (AES_DECRYPT_TABLE_COPIES - 1)) != 0
#error "AES_DECRYPT_TABLE_COPIES must be 1, 2, 4, 8, 16 or 32"
#endif
#if BLOWFISH_TABLE_COPIES < 1 || BLOWFISH_TABLE_COPIES > 32 \
    || (BLOWFISH_TABLE_COPIES & (BLOWFISH_TABLE_COPIES - 1)) != 0
#error "BLOWFISH_TABLE_COPIES must be 1, 2, 4, 8, 16 or 32"
#endif

#define COUNTER_RULE_FULL 0u
#define COUNTER_RULE_LOW32 1u

/* The AES table buffer the host uploads once per device: Te0 (256 words), Td0 (256 words),
 * then the inverse S-box packed four entries per word, entry 4k + j in byte j of word k. */
#define AES_TABLE_WORDS 256u
#define AES_INVERSE_SBOX_WORDS 64u
#define AES_SOURCE_ENCRYPTION_TABLE 0u
#define AES_SOURCE_DECRYPTION_TABLE 256u
#define AES_SOURCE_INVERSE_SBOX 512u

/* Local memory: Te0 and Te1 (its rotation) interleaved per entry; the decryption kernels'
 * Td0 and Td1 likewise, then the packed inverse S-box (see the AES section). */
#define AES_ENCRYPT_SHARED_WORDS (2u * AES_TABLE_WORDS * AES_ENCRYPT_TABLE_COPIES)
#define AES_DECRYPT_INVERSE_SBOX_START (2u * AES_TABLE_WORDS * AES_DECRYPT_TABLE_COPIES)
#define AES_DECRYPT_SHARED_WORDS \
    ((2u * AES_TABLE_WORDS + AES_INVERSE_SBOX_WORDS) * AES_DECRYPT_TABLE_COPIES)

/* Blowfish: four key-dependent S-boxes of 256 words, S-box b entry e at word 256 b + e of
 * the source buffer. */
#define BLOWFISH_SBOX_WORDS 1024u
#define BLOWFISH_SHARED_WORDS (BLOWFISH_SBOX_WORDS * BLOWFISH_TABLE_COPIES)

/* RC6-32/20: 2r + 4 = 44 round-key words. */
#define RC6_ROUNDS 20u

/* ------------------------------------------------------------------------------------- */
/* Shared helpers                                                                         */
/* ------------------------------------------------------------------------------------- */

/* Fills `copies` interleaved replicas of `words` source words: word e of copy c goes to
 * e * copies + c. Consecutive threads write consecutive words (no bank conflicts) and
 * read the same source word in groups (a broadcast). */
DEVICE_FUNCTION void replicate_table(LOCAL u32 *destination, GLOBAL const u32 *RESTRICT source,
                                     const u32 words, const u32 copies)
{
    const u32 total = words * copies;
    for (u32 index = LOCAL_ID(); index < total; index += GROUP_SIZE()) {
        destination[index] = source[index / copies];
    }
}

/* Overwrites key-dependent tables before the work-group ends, so that they are not left
 * in local memory for whatever runs next on the compute unit. Volatile, because stores to
 * local memory that nothing reads afterwards are otherwise dead and may be removed. */
DEVICE_FUNCTION void wipe_table(LOCAL u32 *table, const u32 total)
{
    volatile LOCAL u32 *target = table;
    for (u32 index = LOCAL_ID(); index < total; index += GROUP_SIZE()) {
        target[index] = 0u;
    }
}

DEVICE_FUNCTION u32x4 swap_bytes_u32x4(const u32x4 value)
{
    return MAKE_U32X4(SWAP_BYTES32(value.x), SWAP_BYTES32(value.y), SWAP_BYTES32(value.z),
                      SWAP_BYTES32(value.w));
}

DEVICE_FUNCTION u32x2 swap_bytes_u32x2(const u32x2 value)
{
    return MAKE_U32X2(SWAP_BYTES32(value.x), SWAP_BYTES32(value.y));
}

DEVICE_FUNCTION u32x4 xor_u32x4(const u32x4 left, const u32x4 right)
{
    return MAKE_U32X4(left.x ^ right.x, left.y ^ right.y, left.z ^ right.z, left.w ^ right.w);
}

DEVICE_FUNCTION u32x2 xor_u32x2(const u32x2 left, const u32x2 right)
{
    return MAKE_U32X2(left.x ^ right.x, left.y ^ right.y);
}

/* The 16-byte counter block `offset` steps after `start`. Full: a 128-bit big-endian add,
 * the carry rippling from the last word to the first. Low32: only the last word. */
DEVICE_FUNCTION u32x4 counter_block16(const u32x4 start, const u32 offset, const u32 rule)
{
    const u32 word3 = start.w + offset;
    if (rule == COUNTER_RULE_LOW32) {
        return MAKE_U32X4(start.x, start.y, start.z, word3);
    }
    u32 carry = word3 < offset ? 1u : 0u;
    const u32 word2 = start.z + carry;
    carry = word2 < carry ? 1u : 0u;
    const u32 word1 = start.y + carry;
    carry = word1 < carry ? 1u : 0u;
    const u32 word0 = start.x + carry;
    return MAKE_U32X4(word0, word1, word2, word3);
}

/* The 8-byte counter block `offset` steps after `start` (x high, y low): Full wraps at
 * 2^64, Low32 at 2^32 in the low word. */
DEVICE_FUNCTION u32x2 counter_block8(const u32x2 start, const u32 offset, const u32 rule)
{
    const u32 low = start.y + offset;
    if (rule == COUNTER_RULE_LOW32) {
        return MAKE_U32X2(start.x, low);
    }
    const u32 carry = low < offset ? 1u : 0u;
    return MAKE_U32X2(start.x + carry, low);
}

/* Where block `block` of a segmented CTR launch lies: x is its segment, y its offset in
 * the segment. One division, made once per thread; the grid-stride loop then steps with
 * segment_step. */
DEVICE_FUNCTION u32x2 segment_position(const u32 block, const u32 blocks_per_segment)
{
    const u32 segment = block / blocks_per_segment;
    return MAKE_U32X2(segment, block - segment * blocks_per_segment);
}

/* The position `stride` blocks further on, given the stride's own segment_position: both
 * offsets are below blocks_per_segment, so their sum carries at most one segment. */
DEVICE_FUNCTION u32x2 segment_step(const u32x2 position, const u32x2 stride,
                                   const u32 blocks_per_segment)
{
    u32 segment = position.x + stride.x;
    u32 offset = position.y + stride.y;
    if (offset >= blocks_per_segment) {
        offset -= blocks_per_segment;
        segment += 1u;
    }
    return MAKE_U32X2(segment, offset);
}

/* The grid-stride loops of the modes, one text for every cipher C. Each kernel (or, for AES,
 * each device function per key size) declares its cipher's state (keys, tables, lane) and
 * then expands one of these, which read the kernel's own arguments by name (input, output,
 * block_count, counter, counters, blocks_per_segment, counter_rule, previous) and the
 * cipher's macros, named C_...:
 * - C_FROM_MEMORY, C_TO_MEMORY: a block as loaded to the cipher's words and back (byte swaps
 *   for the big-endian ciphers, nothing for RC6);
 * - C_FROM_COUNTER: a counter block in big-endian words to the cipher's words;
 * - C_SWAP: the block type's byte swap; C_XOR: its XOR; C_COUNTER: counter_block16 or 8;
 * - C_ENCRYPT(block), C_DECRYPT(block): one block with the kernel's key. */
#define MODE_ECB(C, CIPHER)                                                                 \
    for (u32 block = GLOBAL_ID(); block < block_count; block += GLOBAL_SIZE()) {            \
        output[block] = C##_TO_MEMORY(CIPHER(C##_FROM_MEMORY(input[block])));               \
    }

#define MODE_CTR(C)                                                                         \
    for (u32 block = GLOBAL_ID(); block < block_count; block += GLOBAL_SIZE()) {            \
        const C##_BLOCK counter_block =                                                     \
            C##_FROM_COUNTER(C##_COUNTER(counter, block, counter_rule));                    \
        output[block] = C##_XOR(input[block], C##_TO_MEMORY(C##_ENCRYPT(counter_block)));   \
    }

#define MODE_CTR_SEGMENTS(C)                                                                \
    const u32x2 stride = segment_position(GLOBAL_SIZE(), blocks_per_segment);              \
    u32x2 position = segment_position(GLOBAL_ID(), blocks_per_segment);                    \
    for (u32 block = GLOBAL_ID(); block < block_count; block += GLOBAL_SIZE()) {            \
        const C##_BLOCK start = C##_SWAP(counters[position.x]);                             \
        const C##_BLOCK counter_block =                                                     \
            C##_FROM_COUNTER(C##_COUNTER(start, position.y, counter_rule));                 \
        output[block] = C##_XOR(input[block], C##_TO_MEMORY(C##_ENCRYPT(counter_block)));   \
        position = segment_step(position, stride, blocks_per_segment);                      \
    }

#define MODE_CBC_DECRYPT(C)                                                                 \
    for (u32 block = GLOBAL_ID(); block < block_count; block += GLOBAL_SIZE()) {            \
        const C##_BLOCK chain = block == 0 ? previous : input[block - 1];                   \
        const C##_BLOCK plain = C##_TO_MEMORY(C##_DECRYPT(C##_FROM_MEMORY(input[block])));  \
        output[block] = C##_XOR(plain, chain);                                              \
    }

/* ------------------------------------------------------------------------------------- */
/* AES (FIPS-197), the table formulation of parcrypt-ciphers' ReferenceAes                */
/* ------------------------------------------------------------------------------------- */

/* Table layout in local memory: for each entry e, first this entry of Te0 in every copy,
 * then the entry of Te1 = Te0 rotated left by 24 bits in every copy: Te0[e] of copy c at
 * word (2 e) * copies + c, Te1[e] at (2 e + 1) * copies + c. Te2 and Te3 are rotations of
 * these two by 16 bits, so one rotation serves two lookups:
 *   column = Te0[a] ^ Te1[b] ^ rotl16(Te0[c] ^ Te1[d]) ^ key.
 * Lane l still reads only words of bank l (every index is a multiple of 32 plus l with 32
 * copies), so the layout stays free of bank conflicts.
 *
 * Addresses are byte offsets: an entry takes AES_ENTRY_BYTES(copies) bytes. With 32 copies
 * that is 256 bytes, so the offset of byte k of x in lane l's copy of Te0 is
 * (byte k of x) << 8 | 4 l (and for Te1 the same with 4 l + 128): one byte permutation
 * (TABLE_OFFSET256, __byte_perm on CUDA) and the lookup itself. */
#define AES_ENTRY_BYTES(copies) (8u * (copies))

#define TABLE_WORD(table, byte_offset) \
    (*(LOCAL const u32 *)((LOCAL const u8 *)(table) + (byte_offset)))

#if AES_ENCRYPT_TABLE_COPIES == 32
#define AES_ENCRYPT_OFFSET(x, k, lane_bytes) TABLE_OFFSET256((x), (k), (lane_bytes))
#else
#define AES_ENCRYPT_OFFSET(x, k, lane_bytes) \
    ((((x) >> (8u * (k))) & 0xffu) * AES_ENTRY_BYTES(AES_ENCRYPT_TABLE_COPIES) + (lane_bytes))
#endif
#if AES_DECRYPT_TABLE_COPIES == 32
#define AES_DECRYPT_OFFSET(x, k, lane_bytes) TABLE_OFFSET256((x), (k), (lane_bytes))
#else
#define AES_DECRYPT_OFFSET(x, k, lane_bytes) \
    ((((x) >> (8u * (k))) & 0xffu) * AES_ENTRY_BYTES(AES_DECRYPT_TABLE_COPIES) + (lane_bytes))
#endif

/* A lane's byte offsets of its copy of the first table (Te0/Td0) and of the second
 * (Te1/Td1, whose words follow the first's within an entry), computed once per thread and
 * hidden from the optimiser so that each stays one register the lookups add to, rather
 * than being folded back into every address. With 32 copies both are below 256, as
 * TABLE_OFFSET256 needs. */
typedef struct {
    u32 first;
    u32 second;
} aes_lane;

DEVICE_FUNCTION aes_lane aes_lane_offsets(const u32 lane, const u32 copies)
{
    aes_lane offsets;
    offsets.first = HIDE_FROM_OPTIMIZER(4u * lane);
    offsets.second = HIDE_FROM_OPTIMIZER(4u * (lane + copies));
    return offsets;
}

/* The largest schedule, AES-256's: 4 (14 + 1) words. */
#define AES_MAX_ROUND_KEY_WORDS 60u

/* Fills the pair layout above from the 256 source words: consecutive threads write
 * consecutive words (no bank conflicts). */
DEVICE_FUNCTION void replicate_aes_pair(LOCAL u32 *destination,
                                        GLOBAL const u32 *RESTRICT source, const u32 copies)
{
    const u32 total = 2u * AES_TABLE_WORDS * copies;
    for (u32 index = LOCAL_ID(); index < total; index += GROUP_SIZE()) {
        const u32 slot = index / copies;
        const u32 word = source[slot >> 1];
        destination[index] = (slot & 1u) != 0u ? ROTATE_LEFT32(word, 24u) : word;
    }
}

/* One column of a middle round through the two-table layout (OFFSET: AES_ENCRYPT_OFFSET or
 * AES_DECRYPT_OFFSET, whose copy counts may differ): a, b, c, d are the input columns whose
 * rows 0..3 it takes. */
#define AES_DEFINE_COLUMN(name, OFFSET)                                                     \
    DEVICE_FUNCTION u32 name(LOCAL const u32 *table, const aes_lane lane, const u32 a,      \
                             const u32 b, const u32 c, const u32 d, const u32 key)          \
    {                                                                                       \
        const u32 first = TABLE_WORD(table, OFFSET(a, 3u, lane.first))                      \
                        ^ TABLE_WORD(table, OFFSET(b, 2u, lane.second));                    \
        const u32 second = TABLE_WORD(table, OFFSET(c, 1u, lane.first))                     \
                         ^ TABLE_WORD(table, OFFSET(d, 0u, lane.second));                   \
        return first ^ ROTATE_LEFT32(second, 16u) ^ key;                                    \
    }

AES_DEFINE_COLUMN(aes_encrypt_column, AES_ENCRYPT_OFFSET)
AES_DEFINE_COLUMN(aes_decrypt_column, AES_DECRYPT_OFFSET)

/* A round's four output columns from `column(table, lane, a, b, c, d, key)`, in the order
 * of (Inv)ShiftRows. Encryption: output column c takes row r from input column c + r.
 * Decryption (the equivalent inverse cipher): InvShiftRows moves row r right by r, so
 * output column c takes row r from input column c - r. */
#define AES_SHIFT_ROWS(column, table, lane, state, key)                                     \
    MAKE_U32X4(column(table, lane, state.x, state.y, state.z, state.w, key[0]),             \
               column(table, lane, state.y, state.z, state.w, state.x, key[1]),             \
               column(table, lane, state.z, state.w, state.x, state.y, key[2]),             \
               column(table, lane, state.w, state.x, state.y, state.z, key[3]))
#define AES_INVERSE_SHIFT_ROWS(column, table, lane, state, key)                             \
    MAKE_U32X4(column(table, lane, state.x, state.w, state.z, state.y, key[0]),             \
               column(table, lane, state.y, state.x, state.w, state.z, key[1]),             \
               column(table, lane, state.z, state.y, state.x, state.w, key[2]),             \
               column(table, lane, state.w, state.z, state.y, state.x, key[3]))

DEVICE_FUNCTION u32x4 aes_encrypt_round(const u32x4 state, const u32 *keys,
                                        LOCAL const u32 *table, const aes_lane lane)
{
    return AES_SHIFT_ROWS(aes_encrypt_column, table, lane, state, keys);
}

/* The last round has no MixColumns: it needs S[x], which is byte 1 (and byte 2) of
 * Te0[x] = (2 S[x], S[x], S[x], 3 S[x]), so no separate S-box table is kept. */
DEVICE_FUNCTION u32 aes_encrypt_last_column(LOCAL const u32 *table, const aes_lane lane,
                                            const u32 a, const u32 b, const u32 c,
                                            const u32 d, const u32 key)
{
    return (((TABLE_WORD(table, AES_ENCRYPT_OFFSET(a, 3u, lane.first)) << 8) & 0xff000000u)
          | (TABLE_WORD(table, AES_ENCRYPT_OFFSET(b, 2u, lane.first)) & 0x00ff0000u)
          | (TABLE_WORD(table, AES_ENCRYPT_OFFSET(c, 1u, lane.first)) & 0x0000ff00u)
          | ((TABLE_WORD(table, AES_ENCRYPT_OFFSET(d, 0u, lane.first)) >> 8) & 0x000000ffu))
         ^ key;
}

/* The body of both directions' block functions: the first round key added to `state`,
 * the full rounds (ROUND over `table` with the lane offsets LANES), then the value of LAST,
 * the last round over `key`. `rounds` is 10, 12 or 14 and a constant where this is inlined
 * (see AES_RUN_BLOCKS), so the rounds unroll completely and every round key is a register. */
#define AES_ROUNDS(ROUND, LANES, LAST)                                                      \
    state = MAKE_U32X4(state.x ^ keys[0], state.y ^ keys[1], state.z ^ keys[2],            \
                       state.w ^ keys[3]);                                                  \
    UNROLL                                                                                  \
    for (u32 round = 1; round < rounds; round++) {                                          \
        state = ROUND(state, keys + 4u * round, table, LANES);                              \
    }                                                                                       \
    const u32 *key = keys + 4u * rounds;                                                    \
    return LAST

DEVICE_FUNCTION u32x4 aes_encrypt_block(u32x4 state, const u32 *keys, const u32 rounds,
                                        LOCAL const u32 *table, const aes_lane lane)
{
    AES_ROUNDS(aes_encrypt_round, lane,
               AES_SHIFT_ROWS(aes_encrypt_last_column, table, lane, state, key));
}

DEVICE_FUNCTION u32x4 aes_decrypt_round(const u32x4 state, const u32 *keys,
                                        LOCAL const u32 *table, const aes_lane lane)
{
    return AES_INVERSE_SHIFT_ROWS(aes_decrypt_column, table, lane, state, keys);
}

/* The inverse S-box is packed four entries per word, so that each lane's copy is 256 bytes
 * and still one bank per lane: entry e is byte e % 4 of word e / 4, word w of copy c at
 * w * copies + c. */
DEVICE_FUNCTION u32 aes_inverse_sbox(LOCAL const u32 *inverse_sbox, const u32 lane,
                                     const u32 entry)
{
    const u32 word = inverse_sbox[(entry >> 2) * AES_DECRYPT_TABLE_COPIES + lane];
    return (word >> ((entry & 3u) * 8u)) & 0xffu;
}

DEVICE_FUNCTION u32 aes_decrypt_last_column(LOCAL const u32 *inverse_sbox, const u32 lane,
                                            const u32 a, const u32 b, const u32 c,
                                            const u32 d, const u32 key)
{
    return ((aes_inverse_sbox(inverse_sbox, lane, a >> 24) << 24)
          | (aes_inverse_sbox(inverse_sbox, lane, (b >> 16) & 0xffu) << 16)
          | (aes_inverse_sbox(inverse_sbox, lane, (c >> 8) & 0xffu) << 8)
          | aes_inverse_sbox(inverse_sbox, lane, d & 0xffu))
         ^ key;
}

DEVICE_FUNCTION u32x4 aes_decrypt_block(u32x4 state, const u32 *keys, const u32 rounds,
                                        LOCAL const u32 *table, LOCAL const u32 *inverse_sbox,
                                        const u32 lane)
{
    const aes_lane lanes = aes_lane_offsets(lane, AES_DECRYPT_TABLE_COPIES);
    AES_ROUNDS(aes_decrypt_round, lanes,
               AES_INVERSE_SHIFT_ROWS(aes_decrypt_last_column, inverse_sbox, lane, state, key));
}

/* Copies the 4 (rounds + 1) round-key words into a private array once per thread; with
 * `rounds` a constant the loop unrolls and the array lives in registers, so the rounds read
 * no memory for their keys. */
DEVICE_FUNCTION void aes_load_keys(u32 *keys, CONSTANT u32 *RESTRICT round_keys,
                                   const u32 rounds)
{
    UNROLL
    for (u32 index = 0; index < 4u * (rounds + 1u); index++) {
        keys[index] = round_keys[index];
    }
}

/* Runs the blocks function FUNCTION over the launch (AES_BLOCKS_ARGUMENTS, below) and the
 * mode's arguments after them, with the round count a compile-time constant: one
 * specialised, fully unrolled copy per key size, chosen once per thread. */
#define AES_RUN_BLOCKS(FUNCTION, ...)                                                       \
    do {                                                                                    \
        if (rounds == 10u) {                                                                \
            FUNCTION(AES_BLOCKS_ARGUMENTS(10u), __VA_ARGS__);                               \
        } else if (rounds == 12u) {                                                         \
            FUNCTION(AES_BLOCKS_ARGUMENTS(12u), __VA_ARGS__);                               \
        } else {                                                                            \
            FUNCTION(AES_BLOCKS_ARGUMENTS(14u), __VA_ARGS__);                               \
        }                                                                                   \
    } while (0)

/* AES for the mode loops (MODE_*): blocks are four big-endian words, and the cipher calls
 * read the names every AES device function below declares (keys, rounds, table, lane and,
 * decrypting, inverse_sbox). */
#define AES_BLOCK u32x4
#define AES_FROM_MEMORY(block) swap_bytes_u32x4(block)
#define AES_TO_MEMORY(block) swap_bytes_u32x4(block)
#define AES_FROM_COUNTER(block) (block)
#define AES_SWAP swap_bytes_u32x4
#define AES_XOR xor_u32x4
#define AES_COUNTER counter_block16
#define AES_ENCRYPT(block) aes_encrypt_block((block), keys, rounds, table, lane)
#define AES_DECRYPT(block) aes_decrypt_block((block), keys, rounds, table, inverse_sbox, lane)

/* The blocks of one launch, with the key size fixed: each a DEVICE_FUNCTION that the
 * kernels below call once per key size through AES_RUN_BLOCKS. */

/* The body of each: the round keys into registers, then its mode loop. */
#define AES_BLOCKS(MODE_LOOP)                                                               \
    u32 keys[AES_MAX_ROUND_KEY_WORDS];                                                      \
    aes_load_keys(keys, round_keys, rounds);                                                \
    MODE_LOOP

/* The parameters each starts with: the data and its block count, the round keys and their
 * count, and the tables in local memory; then those of its mode. The kernels pass them as
 * AES_BLOCKS_ARGUMENTS, with the round count a constant. */
#define AES_BLOCKS_PARAMETERS                                                               \
    GLOBAL const u32x4 *input, GLOBAL u32x4 *output, const u32 block_count,                \
        CONSTANT u32 *RESTRICT round_keys, const u32 rounds, LOCAL const u32 *table
#define AES_BLOCKS_ARGUMENTS(ROUNDS) input, output, block_count, round_keys, ROUNDS, shared

DEVICE_FUNCTION void aes_ecb_encrypt_blocks(AES_BLOCKS_PARAMETERS, const aes_lane lane)
{
    AES_BLOCKS(MODE_ECB(AES, AES_ENCRYPT))
}

DEVICE_FUNCTION void aes_ecb_decrypt_blocks(AES_BLOCKS_PARAMETERS,
                                            LOCAL const u32 *inverse_sbox, const u32 lane)
{
    AES_BLOCKS(MODE_ECB(AES, AES_DECRYPT))
}

DEVICE_FUNCTION void aes_ctr_blocks(AES_BLOCKS_PARAMETERS, const aes_lane lane,
                                    const u32x4 counter, const u32 counter_rule)
{
    AES_BLOCKS(MODE_CTR(AES))
}

DEVICE_FUNCTION void aes_ctr_segment_blocks(AES_BLOCKS_PARAMETERS, const aes_lane lane,
                                            GLOBAL const u32x4 *RESTRICT counters,
                                            const u32 blocks_per_segment,
                                            const u32 counter_rule)
{
    AES_BLOCKS(MODE_CTR_SEGMENTS(AES))
}

DEVICE_FUNCTION void aes_cbc_decrypt_blocks(AES_BLOCKS_PARAMETERS,
                                            LOCAL const u32 *inverse_sbox, const u32 lane,
                                            const u32x4 previous)
{
    AES_BLOCKS(MODE_CBC_DECRYPT(AES))
}

/* What every AES kernel does before its blocks: the tables into local memory (encryption:
 * the Te pair; decryption: the Td pair and the inverse S-box), a barrier, and the lane's
 * offsets (decryption: the lane, whose pair offsets aes_decrypt_block makes). */
#define AES_ENCRYPT_KERNEL_START                                                            \
    DECLARE_SHARED_WORDS(shared, AES_ENCRYPT_SHARED_WORDS);                                 \
    replicate_aes_pair(shared, tables + AES_SOURCE_ENCRYPTION_TABLE, AES_ENCRYPT_TABLE_COPIES); \
    BARRIER();                                                                              \
    const aes_lane lane =                                                                   \
        aes_lane_offsets(LOCAL_ID() % AES_ENCRYPT_TABLE_COPIES, AES_ENCRYPT_TABLE_COPIES)
#define AES_DECRYPT_KERNEL_START                                                            \
    DECLARE_SHARED_WORDS(shared, AES_DECRYPT_SHARED_WORDS);                                 \
    LOCAL u32 *inverse_sbox = shared + AES_DECRYPT_INVERSE_SBOX_START;                      \
    replicate_aes_pair(shared, tables + AES_SOURCE_DECRYPTION_TABLE, AES_DECRYPT_TABLE_COPIES); \
    replicate_table(inverse_sbox, tables + AES_SOURCE_INVERSE_SBOX, AES_INVERSE_SBOX_WORDS, \
                    AES_DECRYPT_TABLE_COPIES);                                              \
    BARRIER();                                                                              \
    const u32 lane = HIDE_FROM_OPTIMIZER(LOCAL_ID() % AES_DECRYPT_TABLE_COPIES)

/* Every AES kernel takes: input, output, the number of 16-byte blocks, the round keys
 * (encryption or equivalent-inverse schedule, 4 (rounds + 1) words), the round count and
 * the table buffer described at AES_SOURCE_*. */

KERNEL void aes_ecb_encrypt(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                            const u32 block_count, CONSTANT u32 *RESTRICT round_keys,
                            const u32 rounds, GLOBAL const u32 *RESTRICT tables)
{
    AES_ENCRYPT_KERNEL_START;
    AES_RUN_BLOCKS(aes_ecb_encrypt_blocks, lane);
}

KERNEL void aes_ecb_decrypt(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                            const u32 block_count, CONSTANT u32 *RESTRICT round_keys,
                            const u32 rounds, GLOBAL const u32 *RESTRICT tables)
{
    AES_DECRYPT_KERNEL_START;
    AES_RUN_BLOCKS(aes_ecb_decrypt_blocks, inverse_sbox, lane);
}

/* CTR: output = input XOR E(counter + block). Encryption and decryption are the same. */
KERNEL void aes_ctr(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                    const u32 block_count, CONSTANT u32 *RESTRICT round_keys, const u32 rounds,
                    GLOBAL const u32 *RESTRICT tables, const u32x4 counter,
                    const u32 counter_rule)
{
    AES_ENCRYPT_KERNEL_START;
    AES_RUN_BLOCKS(aes_ctr_blocks, lane, counter, counter_rule);
}

/* CTR over consecutive segments, each from its own counter block (see DATA LAYOUT):
 * `counters` holds one 16-byte counter block per segment of the launch, in memory byte
 * order. blocks_per_segment is at least 1. */
KERNEL void aes_ctr_segments(GLOBAL const u32x4 *input,
                             GLOBAL u32x4 *output, const u32 block_count,
                             CONSTANT u32 *RESTRICT round_keys, const u32 rounds,
                             GLOBAL const u32 *RESTRICT tables,
                             GLOBAL const u32x4 *RESTRICT counters,
                             const u32 blocks_per_segment, const u32 counter_rule)
{
    AES_ENCRYPT_KERNEL_START;
    AES_RUN_BLOCKS(aes_ctr_segment_blocks, lane, counters, blocks_per_segment, counter_rule);
}

/* CBC decryption: output[i] = D(input[i]) XOR input[i - 1], with `previous` (in memory
 * byte order, like the data) standing in for input[-1]. */
KERNEL void aes_cbc_decrypt(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                            const u32 block_count, CONSTANT u32 *RESTRICT round_keys,
                            const u32 rounds, GLOBAL const u32 *RESTRICT tables,
                            const u32x4 previous)
{
    AES_DECRYPT_KERNEL_START;
    AES_RUN_BLOCKS(aes_cbc_decrypt_blocks, inverse_sbox, lane, previous);
}

/* ------------------------------------------------------------------------------------- */
/* Blowfish (Schneier 1993), as parcrypt-ciphers' Blowfish                                */
/* ------------------------------------------------------------------------------------- */

/* Local memory layout: two regions, S-boxes 0 and 1, then 2 and 3; within a region, for
 * each entry e, that entry of the region's first S-box in every copy, then of its second:
 * S-box b entry e of copy c is word (b / 2) * 512 copies + (2 e + b % 2) * copies + c.
 * Lane l reads only words of bank l (each index is a multiple of 32 plus l with 32
 * copies), so the layout stays free of bank conflicts. An entry takes 8 copies bytes:
 * with 32 copies that is 256, so the byte offset of the entry for byte k of x is
 * (byte k of x) << 8 plus the lane's own offset of the S-box, whose byte 1 is zero (lane
 * and half below 256, region at 64 KiB): one byte permutation (TABLE_OFFSET256). */
#define BLOWFISH_REGION_BYTES (2048u * BLOWFISH_TABLE_COPIES)
#define BLOWFISH_P_WORDS 18u

#if BLOWFISH_TABLE_COPIES == 32
#define BLOWFISH_OFFSET(x, k, lane_box) TABLE_OFFSET256((x), (k), (lane_box))
#else
#define BLOWFISH_OFFSET(x, k, lane_box) \
    ((((x) >> (8u * (k))) & 0xffu) * (8u * BLOWFISH_TABLE_COPIES) + (lane_box))
#endif

/* Fills the layout above from the source's four S-boxes (box b entry e at 256 b + e):
 * consecutive threads write consecutive words (no bank conflicts). */
DEVICE_FUNCTION void replicate_blowfish(LOCAL u32 *destination,
                                        GLOBAL const u32 *RESTRICT source)
{
    const u32 total = BLOWFISH_SBOX_WORDS * BLOWFISH_TABLE_COPIES;
    for (u32 index = LOCAL_ID(); index < total; index += GROUP_SIZE()) {
        const u32 slot = index / BLOWFISH_TABLE_COPIES;
        const u32 second = slot & 1u;
        const u32 entry = (slot >> 1) & 0xffu;
        const u32 region = slot >> 9;
        destination[index] = source[(2u * region + second) * 256u + entry];
    }
}

/* The byte offsets of this lane's copy of each S-box, computed once per thread and hidden
 * from the optimiser (see aes_lane). */
typedef struct {
    u32 box[4];
} blowfish_lane;

DEVICE_FUNCTION blowfish_lane blowfish_lane_offsets(const u32 lane)
{
    blowfish_lane offsets;
    UNROLL
    for (u32 box = 0; box < 4u; box++) {
        offsets.box[box] = HIDE_FROM_OPTIMIZER((box >> 1) * BLOWFISH_REGION_BYTES
                                               + (box & 1u) * 4u * BLOWFISH_TABLE_COPIES
                                               + 4u * lane);
    }
    return offsets;
}

/* F(x) = ((S0[a] + S1[b]) ^ S2[c]) + S3[d] over the bytes of x, most significant first. */
DEVICE_FUNCTION u32 blowfish_f(LOCAL const u32 *sboxes, const blowfish_lane lane, const u32 x)
{
    const u32 a = TABLE_WORD(sboxes, BLOWFISH_OFFSET(x, 3u, lane.box[0]));
    const u32 b = TABLE_WORD(sboxes, BLOWFISH_OFFSET(x, 2u, lane.box[1]));
    const u32 c = TABLE_WORD(sboxes, BLOWFISH_OFFSET(x, 1u, lane.box[2]));
    const u32 d = TABLE_WORD(sboxes, BLOWFISH_OFFSET(x, 0u, lane.box[3]));
    return ((a + b) ^ c) + d;
}

/* Sixteen rounds as eight double rounds that XOR the next P word into the half being
 * updated, so the halves never swap; the result comes out as (right, left), which is the
 * order Blowfish's last round leaves the block in. `block` holds big-endian words; `p` is
 * the P-array in registers (blowfish_load_p). */
DEVICE_FUNCTION u32x2 blowfish_encrypt_block(const u32x2 block, const u32 *p,
                                             LOCAL const u32 *sboxes, const blowfish_lane lane)
{
    u32 left = block.x ^ p[0];
    u32 right = block.y;
    UNROLL
    for (u32 round = 1; round < 16; round += 2) {
        right ^= blowfish_f(sboxes, lane, left) ^ p[round];
        left ^= blowfish_f(sboxes, lane, right) ^ p[round + 1];
    }
    return MAKE_U32X2(right ^ p[17], left);
}

/* The same rounds with the P-array read backwards. */
DEVICE_FUNCTION u32x2 blowfish_decrypt_block(const u32x2 block, const u32 *p,
                                             LOCAL const u32 *sboxes, const blowfish_lane lane)
{
    u32 left = block.x ^ p[17];
    u32 right = block.y;
    UNROLL
    for (u32 round = 16; round > 1; round -= 2) {
        right ^= blowfish_f(sboxes, lane, left) ^ p[round];
        left ^= blowfish_f(sboxes, lane, right) ^ p[round - 1];
    }
    return MAKE_U32X2(right ^ p[0], left);
}

/* The P-array into registers, once per thread: the rounds then read no memory but the
 * S-boxes. */
DEVICE_FUNCTION void blowfish_load_p(u32 *p, CONSTANT u32 *RESTRICT p_array)
{
    UNROLL
    for (u32 index = 0; index < BLOWFISH_P_WORDS; index++) {
        p[index] = p_array[index];
    }
}

/* Blowfish for the mode loops (MODE_*): blocks are two big-endian words. */
#define BLOWFISH_BLOCK u32x2
#define BLOWFISH_FROM_MEMORY(block) swap_bytes_u32x2(block)
#define BLOWFISH_TO_MEMORY(block) swap_bytes_u32x2(block)
#define BLOWFISH_FROM_COUNTER(block) (block)
#define BLOWFISH_SWAP swap_bytes_u32x2
#define BLOWFISH_XOR xor_u32x2
#define BLOWFISH_COUNTER counter_block8
#define BLOWFISH_ENCRYPT(block) blowfish_encrypt_block((block), p, shared, lane)
#define BLOWFISH_DECRYPT(block) blowfish_decrypt_block((block), p, shared, lane)

/* The body of every Blowfish kernel around its mode loop: the keyed S-boxes into local
 * memory and the P-array into registers before it, and the S-boxes wiped after it. */
#define BLOWFISH_KERNEL(MODE_LOOP)                                                          \
    DECLARE_SHARED_WORDS(shared, BLOWFISH_SHARED_WORDS);                                    \
    replicate_blowfish(shared, sboxes);                                                     \
    BARRIER();                                                                              \
    const blowfish_lane lane = blowfish_lane_offsets(LOCAL_ID() % BLOWFISH_TABLE_COPIES);   \
    u32 p[BLOWFISH_P_WORDS];                                                                \
    blowfish_load_p(p, p_array);                                                            \
    MODE_LOOP                                                                               \
    BARRIER();                                                                              \
    wipe_table(shared, BLOWFISH_SHARED_WORDS)

/* Every Blowfish kernel takes: input, output, the number of 8-byte blocks, the P-array
 * (18 words) and the four keyed S-boxes (1024 words). */

KERNEL void blowfish_ecb_encrypt(GLOBAL const u32x2 *input,
                                 GLOBAL u32x2 *output, const u32 block_count,
                                 CONSTANT u32 *RESTRICT p_array,
                                 GLOBAL const u32 *RESTRICT sboxes)
{
    BLOWFISH_KERNEL(MODE_ECB(BLOWFISH, BLOWFISH_ENCRYPT));
}

KERNEL void blowfish_ecb_decrypt(GLOBAL const u32x2 *input,
                                 GLOBAL u32x2 *output, const u32 block_count,
                                 CONSTANT u32 *RESTRICT p_array,
                                 GLOBAL const u32 *RESTRICT sboxes)
{
    BLOWFISH_KERNEL(MODE_ECB(BLOWFISH, BLOWFISH_DECRYPT));
}

KERNEL void blowfish_ctr(GLOBAL const u32x2 *input, GLOBAL u32x2 *output,
                         const u32 block_count, CONSTANT u32 *RESTRICT p_array,
                         GLOBAL const u32 *RESTRICT sboxes, const u32x2 counter,
                         const u32 counter_rule)
{
    BLOWFISH_KERNEL(MODE_CTR(BLOWFISH));
}

/* Segmented CTR as aes_ctr_segments, with one 8-byte counter block per segment. */
KERNEL void blowfish_ctr_segments(GLOBAL const u32x2 *input,
                                  GLOBAL u32x2 *output, const u32 block_count,
                                  CONSTANT u32 *RESTRICT p_array,
                                  GLOBAL const u32 *RESTRICT sboxes,
                                  GLOBAL const u32x2 *RESTRICT counters,
                                  const u32 blocks_per_segment, const u32 counter_rule)
{
    BLOWFISH_KERNEL(MODE_CTR_SEGMENTS(BLOWFISH));
}

KERNEL void blowfish_cbc_decrypt(GLOBAL const u32x2 *input,
                                 GLOBAL u32x2 *output, const u32 block_count,
                                 CONSTANT u32 *RESTRICT p_array,
                                 GLOBAL const u32 *RESTRICT sboxes, const u32x2 previous)
{
    BLOWFISH_KERNEL(MODE_CBC_DECRYPT(BLOWFISH));
}

/* ------------------------------------------------------------------------------------- */
/* RC6-32/20/b (Rivest, Robshaw, Sidney, Yin 1998), as parcrypt-ciphers' Rc6              */
/* ------------------------------------------------------------------------------------- */

/* f(x) = x (2x + 1) mod 2^32, rotated left by lg w = 5. */
DEVICE_FUNCTION u32 rc6_quadratic(const u32 x)
{
    return ROTATE_LEFT32(x * (2u * x + 1u), 5u);
}

/* Words A, B, C, D are the block's little-endian words, i.e. the loaded words as they are.
 * Four rounds per iteration bring the word rotation (A, B, C, D) = (B, C, D, A) back to
 * the start, so each round just names the words in its own order. */
#define RC6_ENCRYPT_ROUND(a, b, c, d, key)                \
    do {                                                  \
        const u32 t = rc6_quadratic(b);                   \
        const u32 u = rc6_quadratic(d);                   \
        a = ROTATE_LEFT32(a ^ t, u) + (key)[0];           \
        c = ROTATE_LEFT32(c ^ u, t) + (key)[1];           \
    } while (0)

#define RC6_DECRYPT_ROUND(a, b, c, d, key)                \
    do {                                                  \
        const u32 t = rc6_quadratic(b);                   \
        const u32 u = rc6_quadratic(d);                   \
        c = ROTATE_RIGHT32(c - (key)[1], t) ^ u;          \
        a = ROTATE_RIGHT32(a - (key)[0], u) ^ t;          \
    } while (0)

/* RC6-32/20: 2 r + 4 = 44 round-key words, which the kernels copy into registers once per
 * thread (rc6_load_keys): the rounds then read no memory at all. */
#define RC6_KEY_WORDS (2u * RC6_ROUNDS + 4u)

DEVICE_FUNCTION void rc6_load_keys(u32 *keys, CONSTANT u32 *RESTRICT round_keys)
{
    UNROLL
    for (u32 index = 0; index < RC6_KEY_WORDS; index++) {
        keys[index] = round_keys[index];
    }
}

DEVICE_FUNCTION u32x4 rc6_encrypt_block(const u32x4 block, const u32 *keys)
{
    u32 a = block.x;
    u32 b = block.y + keys[0];
    u32 c = block.z;
    u32 d = block.w + keys[1];
    UNROLL
    for (u32 round = 0; round < RC6_ROUNDS; round += 4) {
        const u32 *key = keys + 2 + 2 * round;
        RC6_ENCRYPT_ROUND(a, b, c, d, key);
        RC6_ENCRYPT_ROUND(b, c, d, a, key + 2);
        RC6_ENCRYPT_ROUND(c, d, a, b, key + 4);
        RC6_ENCRYPT_ROUND(d, a, b, c, key + 6);
    }
    return MAKE_U32X4(a + keys[2 * RC6_ROUNDS + 2], b, c + keys[2 * RC6_ROUNDS + 3], d);
}

DEVICE_FUNCTION u32x4 rc6_decrypt_block(const u32x4 block, const u32 *keys)
{
    u32 a = block.x - keys[2 * RC6_ROUNDS + 2];
    u32 b = block.y;
    u32 c = block.z - keys[2 * RC6_ROUNDS + 3];
    u32 d = block.w;
    UNROLL
    for (u32 round = RC6_ROUNDS; round > 0; round -= 4) {
        const u32 *key = keys + 2 + 2 * (round - 4);
        RC6_DECRYPT_ROUND(d, a, b, c, key + 6);
        RC6_DECRYPT_ROUND(c, d, a, b, key + 4);
        RC6_DECRYPT_ROUND(b, c, d, a, key + 2);
        RC6_DECRYPT_ROUND(a, b, c, d, key);
    }
    return MAKE_U32X4(a, b - keys[0], c, d - keys[1]);
}

/* RC6 for the mode loops (MODE_*): blocks are four little-endian words, loaded as they
 * are; the big-endian counter words are byte-swapped into RC6's. */
#define RC6_BLOCK u32x4
#define RC6_FROM_MEMORY(block) (block)
#define RC6_TO_MEMORY(block) (block)
#define RC6_FROM_COUNTER(block) swap_bytes_u32x4(block)
#define RC6_SWAP swap_bytes_u32x4
#define RC6_XOR xor_u32x4
#define RC6_COUNTER counter_block16
#define RC6_ENCRYPT(block) rc6_encrypt_block((block), keys)
#define RC6_DECRYPT(block) rc6_decrypt_block((block), keys)

/* The body of every RC6 kernel: the round keys into registers, then its mode loop. */
#define RC6_KERNEL(MODE_LOOP)                                                               \
    u32 keys[RC6_KEY_WORDS];                                                                \
    rc6_load_keys(keys, round_keys);                                                        \
    MODE_LOOP

/* Every RC6 kernel takes: input, output, the number of 16-byte blocks and the 44 round-key
 * words. No tables, so no local memory and no barrier. */

KERNEL void rc6_ecb_encrypt(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                            const u32 block_count, CONSTANT u32 *RESTRICT round_keys)
{
    RC6_KERNEL(MODE_ECB(RC6, RC6_ENCRYPT))
}

KERNEL void rc6_ecb_decrypt(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                            const u32 block_count, CONSTANT u32 *RESTRICT round_keys)
{
    RC6_KERNEL(MODE_ECB(RC6, RC6_DECRYPT))
}

/* The counter block is big-endian bytes; RC6 reads them as little-endian words, so the
 * counter words are byte-swapped on the way in. */
KERNEL void rc6_ctr(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                    const u32 block_count, CONSTANT u32 *RESTRICT round_keys,
                    const u32x4 counter, const u32 counter_rule)
{
    RC6_KERNEL(MODE_CTR(RC6))
}

/* Segmented CTR as aes_ctr_segments; the counter blocks are swapped into big-endian words
 * for the addition and back into RC6's little-endian words for the cipher. */
KERNEL void rc6_ctr_segments(GLOBAL const u32x4 *input,
                             GLOBAL u32x4 *output, const u32 block_count,
                             CONSTANT u32 *RESTRICT round_keys,
                             GLOBAL const u32x4 *RESTRICT counters,
                             const u32 blocks_per_segment, const u32 counter_rule)
{
    RC6_KERNEL(MODE_CTR_SEGMENTS(RC6))
}

KERNEL void rc6_cbc_decrypt(GLOBAL const u32x4 *input, GLOBAL u32x4 *output,
                            const u32 block_count, CONSTANT u32 *RESTRICT round_keys,
                            const u32x4 previous)
{
    RC6_KERNEL(MODE_CBC_DECRYPT(RC6))
}

/* ------------------------------------------------------------------------------------- */
/* GHASH partial sums (SP 800-38D section 6.4), as parcrypt-modes' soft GHASH             */
/* ------------------------------------------------------------------------------------- */

/* The arithmetic follows crates/modes/src/ghash/soft.rs, the CPU's portable code: an element
 * is the block read as a big-endian 128-bit integer (here a high and a low u64), products
 * are carry-less, computed with ordinary integer multiplications of operands whose set bits
 * are spaced apart (so carries never reach a kept bit), and a Montgomery reduction by
 * y^-128 follows. The key arrives "prepared" (multiplied by x^-1 on the host) to cancel the
 * reduction's extra factor x. Where soft.rs multiplies 64-bit words with bits five apart
 * (the CPU's widest product), the kernel multiplies 32-bit words with bits four apart: a
 * GPU makes a 32 x 32 -> 64-bit product in one instruction and a 64-bit one from several
 * (sm_90 SASS: 788 instructions per block in `ghash_segments` before, 574 after, 390
 * 64-bit multiply-adds before, 153 after; scripts/kernel-report.py).
 *
 * Constant time: no table, no branch and no memory address depends on the data or on H;
 * only on the public sizes. Integer multiplication has a fixed latency on the GPUs we know
 * of. */

typedef struct {
    u64 high;
    u64 low;
} ghash_element;

DEVICE_FUNCTION ghash_element make_ghash_element(const u64 high, const u64 low)
{
    ghash_element element;
    element.high = high;
    element.low = low;
    return element;
}

/* The 64-bit carry-less product of two 32-bit polynomials. Each operand is split into four
 * classes, bit i in class i % 4 (eight bits each); class a times class b has its terms only
 * in columns of class (a + b) % 4, at most eight per column, so a column's count fits the
 * four bits up to the next column of its class and its low bit is the carry-less sum. Four
 * products of class pairs land in each class: XORed (a sum would carry), then each class's
 * columns kept. One 32 x 32 -> 64-bit multiplication per pair (16 in all), the GPU's
 * cheapest wide product. */
DEVICE_FUNCTION u64 ghash_clmul32(const u32 left, const u32 right)
{
    const u32 l0 = left & 0x11111111u;
    const u32 l1 = left & 0x22222222u;
    const u32 l2 = left & 0x44444444u;
    const u32 l3 = left & 0x88888888u;
    const u32 r0 = right & 0x11111111u;
    const u32 r1 = right & 0x22222222u;
    const u32 r2 = right & 0x44444444u;
    const u32 r3 = right & 0x88888888u;
    const u64 z0 = ((u64)l0 * r0) ^ ((u64)l1 * r3) ^ ((u64)l2 * r2) ^ ((u64)l3 * r1);
    const u64 z1 = ((u64)l0 * r1) ^ ((u64)l1 * r0) ^ ((u64)l2 * r3) ^ ((u64)l3 * r2);
    const u64 z2 = ((u64)l0 * r2) ^ ((u64)l1 * r1) ^ ((u64)l2 * r0) ^ ((u64)l3 * r3);
    const u64 z3 = ((u64)l0 * r3) ^ ((u64)l1 * r2) ^ ((u64)l2 * r1) ^ ((u64)l3 * r0);
    return (z0 & 0x1111111111111111ull) | (z1 & 0x2222222222222222ull)
           | (z2 & 0x4444444444444444ull) | (z3 & 0x8888888888888888ull);
}

/* The 128-bit carry-less product of two 64-bit polynomials, as (high, low) words: Karatsuba
 * over 32-bit halves, three 32-bit products. */
DEVICE_FUNCTION ghash_element ghash_clmul64(const u64 left, const u64 right)
{
    const u32 left_high = (u32)(left >> 32);
    const u32 left_low = (u32)left;
    const u32 right_high = (u32)(right >> 32);
    const u32 right_low = (u32)right;
    const u64 low = ghash_clmul32(left_low, right_low);
    const u64 high = ghash_clmul32(left_high, right_high);
    const u64 middle =
        ghash_clmul32(left_low ^ left_high, right_low ^ right_high) ^ low ^ high;
    return make_ghash_element(high ^ (middle >> 32), low ^ (middle << 32));
}

/* left * right_prepared in GF(2^128): Karatsuba's three 64-bit products give the 256-bit
 * product as words 3..0, then two folds by the reflected polynomial's upper terms
 * (y^63 + y^62 + y^57, shifts only) clear the low half, which the division drops. */
DEVICE_FUNCTION ghash_element ghash_multiply(const ghash_element left,
                                             const ghash_element right_prepared)
{
    const ghash_element low = ghash_clmul64(left.low, right_prepared.low);
    const ghash_element high = ghash_clmul64(left.high, right_prepared.high);
    ghash_element middle = ghash_clmul64(left.low ^ left.high,
                                         right_prepared.low ^ right_prepared.high);
    middle.high ^= low.high ^ high.high;
    middle.low ^= low.low ^ high.low;

    const u64 word0 = low.low;
    u64 word1 = low.high ^ middle.low;
    u64 word2 = high.low ^ middle.high;
    u64 word3 = high.high;

    word1 ^= (word0 << 63) ^ (word0 << 62) ^ (word0 << 57);
    word2 ^= (word0 >> 1) ^ (word0 >> 2) ^ (word0 >> 7) ^ word0;
    word2 ^= (word1 << 63) ^ (word1 << 62) ^ (word1 << 57);
    word3 ^= (word1 >> 1) ^ (word1 >> 2) ^ (word1 >> 7) ^ word1;
    return make_ghash_element(word3, word2);
}

/* Each work-item hashes whole segments of `blocks_per_segment` blocks (the last segment may
 * be shorter) from a zero state, one multiplication by H per block, and writes the segment's
 * sum as (high, low) to partials[2 s], partials[2 s + 1]. The host joins segments with
 * powers of H. `input` holds `block_count` whole blocks (the host zero-pads a final partial
 * block). The hash key is H * x^-1, as two u64 arguments, high word first. */
KERNEL void ghash_segments(GLOBAL const u32x4 *input, GLOBAL u64 *RESTRICT partials,
                           const u32 block_count, const u32 blocks_per_segment,
                           const u64 hash_key_high, const u64 hash_key_low)
{
    const ghash_element hash_key = make_ghash_element(hash_key_high, hash_key_low);
    const u32 segment_count = (block_count + blocks_per_segment - 1u) / blocks_per_segment;
    for (u32 segment = GLOBAL_ID(); segment < segment_count; segment += GLOBAL_SIZE()) {
        const u32 first = segment * blocks_per_segment;
        const u32 end = block_count - first < blocks_per_segment ? block_count
                                                                 : first + blocks_per_segment;
        ghash_element state = make_ghash_element(0, 0);
        for (u32 block = first; block < end; block++) {
            const u32x4 words = swap_bytes_u32x4(input[block]);
            state.high ^= ((u64)words.x << 32) | (u64)words.y;
            state.low ^= ((u64)words.z << 32) | (u64)words.w;
            state = ghash_multiply(state, hash_key);
        }
        partials[2u * segment] = state.high;
        partials[2u * segment + 1u] = state.low;
    }
}

/* GHASH of whole work-groups of segments, for GCM over a long range: the host then joins one
 * 16-byte sum per work-group (GHASH_GROUP_SEGMENTS segments) instead of one per segment.
 *
 * Every segment is whole (`block_count` is a multiple of `blocks_per_segment`; the host
 * hashes a shorter tail itself). Work-group g covers segments g G .. g G + n - 1, where G is
 * the group size (a power of two up to GHASH_GROUP_SEGMENTS) and n is G except in a launch's
 * last group: a run of N = n m blocks (m = blocks_per_segment), and its sum goes to
 * partials[2 (first_sum + g)], partials[2 (first_sum + g) + 1]. `first_sum` places a
 * launch's sums in a buffer that collects a whole call's (GCM over device-resident slabs
 * downloads them once at the end).
 *
 * The threads share the run block by block, so that a warp's loads are consecutive blocks
 * (coalesced). The run Y_0 .. Y_{N-1} is placed in K G slots Z_0 .. Z_{KG-1}, K = N / G + 1,
 * ending one slot before the last: Z_{q+i} = Y_i for q = K G - 1 - N, and the other slots
 * zero, so that
 *     sum over i of Y_i H^(N-i) = sum over slots s of Z_s H^(KG-1-s)
 *                               = sum over t of H^(G-1-t) A_t,
 *     A_t = sum over k of Z_{t+kG} H^(G(K-1-k)),
 * thread t taking slots t, t + G, t + 2G, ... and A_t by Horner's rule with H^G (one
 * multiplication per slot: at most one block more per thread than a block each). Then
 * log2 G levels join neighbours in local memory: at level k the right one of each pair of
 * 2^k-thread runs becomes left * H^(2^k) + right, so thread G - 1 ends with the run's sum.
 * H^G, prepared, comes from the host as (`stride_key_high`, `stride_key_low`) for the group
 * size it launches; the other powers are squarings on the device (the same for every
 * thread: no branch depends on the data or the key). */
#define GHASH_GROUP_SEGMENTS 256u

/* The prepared form of an element (times x^-1, as the host's `prepare`): a one-bit shift
 * up of the 128-bit integer, and the reflected polynomial's terms when a bit falls off. */
DEVICE_FUNCTION ghash_element ghash_prepare(const ghash_element value)
{
    const u64 carry = value.high >> 63;
    const u64 mask = (u64)0 - carry;
    return make_ghash_element(((value.high << 1) | (value.low >> 63))
                                  ^ (mask & 0xc200000000000000ull),
                              (value.low << 1) ^ (mask & 1ull));
}

KERNEL void ghash_groups(GLOBAL const u32x4 *RESTRICT input, GLOBAL u64 *RESTRICT partials,
                         const u32 block_count, const u32 blocks_per_segment,
                         const u64 hash_key_high, const u64 hash_key_low, const u32 first_sum,
                         const u64 stride_key_high, const u64 stride_key_low)
{
    DECLARE_STATIC_SHARED_WORDS(tree, 4u * GHASH_GROUP_SEGMENTS);
    const ghash_element hash_key = make_ghash_element(hash_key_high, hash_key_low);
    const u32 group_size = GROUP_SIZE();
    const u32 thread = LOCAL_ID();
    const u32 segment_count = block_count / blocks_per_segment;
    const u32 group_count = (segment_count + group_size - 1u) / group_size;
    /* H itself (the field's one times H), where the join below starts; and H^G, prepared
     * (from the host, as the key: a kernel argument costs no registers to keep, a computed
     * one 60 across the loop), the stride of every thread's Horner rule. */
    const ghash_element hash_element =
        ghash_multiply(make_ghash_element(0x8000000000000000ull, 0ull), hash_key);
    const ghash_element stride_key = make_ghash_element(stride_key_high, stride_key_low);
    /* A grid smaller than the groups loops over them; every thread of a work-group takes
     * the same trips, so the barriers below are reached by all. */
    for (u32 group = GLOBAL_ID() / group_size; group < group_count;
         group += GLOBAL_SIZE() / group_size) {
        const u32 first = group * group_size;
        const u32 present = segment_count - first < group_size ? segment_count - first
                                                              : group_size;
        const u32 run = present * blocks_per_segment;
        const u32 rounds = run / group_size + 1u;
        const u32 lead = rounds * group_size - 1u - run;
        GLOBAL const u32x4 *const blocks = input + first * blocks_per_segment;
        ghash_element state = make_ghash_element(0, 0);
        for (u32 round = 0; round < rounds; round++) {
            const u32 padded = thread + round * group_size;
            state = ghash_multiply(state, stride_key);
            if (padded >= lead && padded - lead < run) {
                const u32x4 words = swap_bytes_u32x4(blocks[padded - lead]);
                state.high ^= ((u64)words.x << 32) | (u64)words.y;
                state.low ^= ((u64)words.z << 32) | (u64)words.w;
            }
        }
        /* H, then squared once per level: H^(2^k). */
        ghash_element step = hash_element;
        for (u32 width = 1u; width < group_size; width *= 2u) {
            tree[4u * thread] = (u32)(state.high >> 32);
            tree[4u * thread + 1u] = (u32)state.high;
            tree[4u * thread + 2u] = (u32)(state.low >> 32);
            tree[4u * thread + 3u] = (u32)state.low;
            BARRIER();
            const ghash_element step_prepared = ghash_prepare(step);
            if ((thread & (2u * width - 1u)) == 2u * width - 1u) {
                const u32 left = 4u * (thread - width);
                const ghash_element other = make_ghash_element(
                    ((u64)tree[left] << 32) | (u64)tree[left + 1u],
                    ((u64)tree[left + 2u] << 32) | (u64)tree[left + 3u]);
                const ghash_element carried = ghash_multiply(other, step_prepared);
                state.high ^= carried.high;
                state.low ^= carried.low;
            }
            BARRIER();
            step = ghash_multiply(step, step_prepared);
        }
        if (thread == group_size - 1u) {
            partials[2u * (first_sum + group)] = state.high;
            partials[2u * (first_sum + group) + 1u] = state.low;
        }
    }
}
