/**
 * Classifies an IP address literal for the web capability's SSRF guard: is it
 * a public unicast address a fetch may reach, or which kind of non-public one.
 * Pure arithmetic on the bytes: nothing is resolved or contacted. Addresses
 * that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by the
 * embedded one, because that is where the packets can end up.
 */
import net from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cloud-metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

interface Range {
  readonly bytes: readonly number[];
  readonly prefix: number;
  readonly class: AddressClass;
}

/**
 * Cloud instance-metadata endpoints. Listed exactly (not by range) because
 * they are checked first and must win over their enclosing range's class:
 * AWS/GCP/Azure/OpenStack 169.254.169.254, AWS ECS task metadata 169.254.170.2,
 * AWS IMDS over IPv6 fd00:ec2::254, Alibaba 100.100.100.200, Oracle
 * 192.0.0.192, and Azure's wireserver 168.63.129.16, a public-range address.
 */
const METADATA_ADDRESSES = ['169.254.169.254', '169.254.170.2', '100.100.100.200', '192.0.0.192', '168.63.129.16', 'fd00:ec2::254'];

// IPv4 special-purpose ranges (RFC 6890 and the IANA registry); first match wins.
const V4_RANGES: readonly Range[] = [
  v4('0.0.0.0', 8, 'unspecified'), // "this network"; 0.0.0.0 reaches the local host on Linux
  v4('127.0.0.0', 8, 'loopback'),
  v4('10.0.0.0', 8, 'private'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.168.0.0', 16, 'private'),
  v4('100.64.0.0', 10, 'private'), // carrier-grade NAT shared space
  v4('169.254.0.0', 16, 'link-local'),
  v4('192.0.0.0', 24, 'reserved'), // IETF protocol assignments
  v4('192.0.2.0', 24, 'documentation'),
  v4('198.51.100.0', 24, 'documentation'),
  v4('203.0.113.0', 24, 'documentation'),
  v4('198.18.0.0', 15, 'benchmarking'),
  v4('192.88.99.0', 24, 'reserved'), // deprecated 6to4 relay anycast
  v4('224.0.0.0', 4, 'multicast'),
  v4('255.255.255.255', 32, 'broadcast'),
  v4('240.0.0.0', 4, 'reserved'),
];

const V6_RANGES: readonly Range[] = [
  v6('::', 128, 'unspecified'),
  v6('::1', 128, 'loopback'),
  v6('fc00::', 7, 'private'), // unique local
  v6('fec0::', 10, 'private'), // deprecated site-local, still routed inside some networks
  v6('fe80::', 10, 'link-local'),
  v6('ff00::', 8, 'multicast'),
  v6('2001:db8::', 32, 'documentation'),
  v6('3fff::', 20, 'documentation'),
  v6('2001:2::', 48, 'benchmarking'),
  v6('100::', 64, 'reserved'), // discard-only
  v6('2001::', 23, 'reserved'), // IETF protocol assignments, Teredo included
  v6('::', 96, 'reserved'), // deprecated IPv4-compatible
];

/** Prefixes whose low 32 bits (or bits 16-47 for 6to4) carry an IPv4 address. */
const MAPPED_V4 = v6('::ffff:0:0', 96, 'public');
const NAT64_WELL_KNOWN = v6('64:ff9b::', 96, 'public');
const NAT64_LOCAL = v6('64:ff9b:1::', 48, 'public');
const SIX_TO_FOUR = v6('2002::', 16, 'public');

const METADATA = new Set(METADATA_ADDRESSES.map((address) => bytesKey(parseAddressBytes(address))));

/**
 * The class of an IP address literal (IPv4 dotted quad or IPv6, with or without
 * brackets or a zone id). Throws a TypeError for anything else.
 */
export function classifyAddress(address: string): AddressClass {
  return classifyBytes(parseAddressBytes(address));
}

/** True only for public unicast addresses. */
export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === 'public';
}

/** Bytes of an IP literal: 4 for IPv4, 16 for IPv6. Throws a TypeError for anything else. */
export function parseAddressBytes(address: string): Uint8Array {
  let text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const family = net.isIP(text);
  if (family === 4) return Uint8Array.from(text.split('.').map(Number));
  if (family === 6) return parseV6(text);
  throw new TypeError(`not an IP address literal: ${JSON.stringify(address)}`);
}

function classifyBytes(bytes: Uint8Array): AddressClass {
  if (METADATA.has(bytesKey(bytes))) return 'cloud-metadata';
  if (bytes.length === 4) return matchRanges(bytes, V4_RANGES);
  for (const prefix of [MAPPED_V4, NAT64_WELL_KNOWN, NAT64_LOCAL]) {
    if (inRange(bytes, prefix)) return classifyBytes(bytes.subarray(12, 16));
  }
  if (inRange(bytes, SIX_TO_FOUR)) return classifyBytes(bytes.subarray(2, 6));
  return matchRanges(bytes, V6_RANGES);
}

function matchRanges(bytes: Uint8Array, ranges: readonly Range[]): AddressClass {
  for (const range of ranges) {
    if (inRange(bytes, range)) return range.class;
  }
  return 'public';
}

function inRange(bytes: Uint8Array, range: Range): boolean {
  if (bytes.length !== range.bytes.length) return false;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((range.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

function parseV6(text: string): Uint8Array {
  // net.isIP has validated the syntax; this only expands it.
  let head = text;
  let tail4: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tail4 = text.slice(lastColon + 1).split('.').map(Number);
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [left = '', right] = head.split('::');
  const leftGroups = left === '' ? [] : left.split(':');
  const rightGroups = right === undefined || right === '' ? [] : right.split(':');
  const missing = 8 - leftGroups.length - rightGroups.length;
  const groups = right === undefined ? leftGroups : [...leftGroups, ...Array<string>(missing).fill('0'), ...rightGroups];
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    const value = Number.parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  if (tail4.length === 4) bytes.set(tail4, 12);
  return bytes;
}

function v4(address: string, prefix: number, cls: AddressClass): Range {
  return { bytes: [...parseAddressBytes(address)], prefix, class: cls };
}

function v6(address: string, prefix: number, cls: AddressClass): Range {
  return { bytes: [...parseAddressBytes(address)], prefix, class: cls };
}

function bytesKey(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
