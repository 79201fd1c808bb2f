// Pure classification: nothing here sends a packet to any of these addresses.
import { describe, expect, it } from 'vitest';
import { type AddressClass, classifyAddress, isPublicAddress, parseAddressBytes } from './address-classifier.js';

const TABLE: ReadonlyArray<[string, AddressClass]> = [
  // public
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['192.169.0.1', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
  // loopback
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  // private
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'private'],
  ['100.127.255.255', 'private'],
  ['fc00::1', 'private'],
  ['fd12:3456:789a::1', 'private'],
  ['fec0::1', 'private'],
  // link-local
  ['169.254.0.1', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  // cloud metadata wins over its enclosing range
  ['169.254.169.254', 'cloud-metadata'],
  ['169.254.170.2', 'cloud-metadata'],
  ['fd00:ec2::254', 'cloud-metadata'],
  ['100.100.100.200', 'cloud-metadata'],
  ['168.63.129.16', 'cloud-metadata'],
  ['192.0.0.192', 'cloud-metadata'],
  ['::ffff:169.254.169.254', 'cloud-metadata'],
  // unspecified
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  // multicast and broadcast
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  // documentation, benchmarking, reserved
  ['192.0.2.1', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['2001:db8::1', 'documentation'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['240.0.0.1', 'reserved'],
  ['192.0.0.8', 'reserved'],
  ['100::1', 'reserved'],
  ['2001:0:4136:e378::1', 'reserved'], // Teredo
  ['::7f00:1', 'reserved'], // IPv4-compatible form of 127.0.0.1
  // IPv4 embedded in IPv6 is judged by the IPv4 address
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::a00:1', 'private'],
  ['64:ff9b::808:808', 'public'],
  ['64:ff9b:1::c0a8:1', 'private'],
  ['2002:7f00:1::1', 'loopback'],
  ['2002:a9fe:a9fe::1', 'cloud-metadata'],
  ['2002:808:808::1', 'public'],
];

describe('classifyAddress', () => {
  it.each(TABLE)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
    expect(isPublicAddress(address)).toBe(expected === 'public');
  });

  it.each(['localhost', 'example.com', '', '1.2.3', '01.2.3.4', '1.2.3.256', '::ffff::1', 'http://1.2.3.4/'])(
    'refuses %j as not an address literal',
    (input) => {
      expect(() => classifyAddress(input)).toThrow(TypeError);
    },
  );

  it('expands IPv6 forms to the same bytes', () => {
    expect(parseAddressBytes('::ffff:1.2.3.4')).toEqual(parseAddressBytes('0:0:0:0:0:ffff:102:304'));
    expect([...parseAddressBytes('2001:db8::8:800:200c:417a')]).toEqual([
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0x08, 0x08, 0, 0x20, 0x0c, 0x41, 0x7a,
    ]);
    expect([...parseAddressBytes('fe80::')]).toEqual([0xfe, 0x80, ...Array(14).fill(0)]);
  });
});
