// Read the framing of a LevelDB log file (a write-ahead log, or a MANIFEST):
// 32 KiB blocks of records, each [masked crc32c u32][length u16][type u8]
// then the payload, a record longer than what is left of a block split in
// fragments (FIRST, MIDDLE..., LAST), and under 7 bytes left at a block's
// end filled with zeros.
//
// Why the crash test needs it: a process killed while LevelDB appends a
// record leaves that record incomplete at the end of the log. LevelDB drops
// it when it next opens the database, which is right, but with `reuse_logs`
// (on in Chromium's LevelDB except on ChromeOS) it then keeps appending to
// that log after the partial record. The open after that reads the partial
// record followed by newer ones as a corruption, and Chromium, which opens
// IndexedDB's LevelDB with paranoid checks, deletes the origin's IndexedDB
// data and starts an empty database (google/leveldb#1287; fix proposed in
// google/leveldb#1336: do not reuse such a log).

const BLOCK = 32768
const HEADER = 7
const FULL = 1
const FIRST = 2
const MIDDLE = 3
const LAST = 4

/** @type {Uint32Array} */
const table = new Uint32Array(256)
for (let i = 0; i < 256; i++) {
  let c = i
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
  table[i] = c >>> 0
}

/**
 * CRC-32C of the record type byte then `payload`, masked as LevelDB stores it.
 * @param {number} type @param {Uint8Array} payload
 */
function maskedCrc (type, payload) {
  let crc = ~0 >>> 0
  crc = (table[(crc ^ type) & 0xff] ^ (crc >>> 8)) >>> 0
  for (let i = 0; i < payload.length; i++) crc = (table[(crc ^ payload[i]) & 0xff] ^ (crc >>> 8)) >>> 0
  crc = ~crc >>> 0
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0
}

/**
 * How a log file ends: `end` is the offset just after its last complete
 * record (so `end < size` means it ends in an incomplete one: a header
 * cut short, a payload cut short, or fragments with no LAST), `records`
 * counts the complete records, `corrupt` is the offset of a record that
 * fails its checksum before the end, if any (LevelDB would drop the rest
 * of that block).
 * @param {Uint8Array} bytes
 * @returns {{ size: number, end: number, records: number, corrupt: number | null }}
 */
export function logTail (bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let offset = 0
  let end = 0
  let records = 0
  /** @type {number | null} */
  let corrupt = null
  let fragmented = false
  while (offset < bytes.length) {
    const blockEnd = (Math.floor(offset / BLOCK) + 1) * BLOCK
    if (blockEnd - offset < HEADER) {
      // A block's trailer, unless the file ends inside it.
      if (blockEnd > bytes.length) break
      offset = blockEnd
      if (!fragmented) end = offset
      continue
    }
    if (offset + HEADER > bytes.length) break
    const crc = view.getUint32(offset, true)
    const length = view.getUint16(offset + 4, true)
    const type = bytes[offset + 6]
    if (offset + HEADER + length > bytes.length) break
    if (offset + HEADER + length > blockEnd || maskedCrc(type, bytes.subarray(offset + HEADER, offset + HEADER + length)) !== crc) {
      if (corrupt === null) corrupt = offset
      offset = blockEnd
      fragmented = false
      continue
    }
    offset += HEADER + length
    if (type === FULL || type === LAST) {
      fragmented = false
      records++
      end = offset
    } else if (type === FIRST || type === MIDDLE) {
      fragmented = true
    }
  }
  return { size: bytes.length, end, records, corrupt }
}
