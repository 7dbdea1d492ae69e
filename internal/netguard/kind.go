package netguard

import "net/netip"

// reservedPrefixes are non-public ranges that netip.Addr has no method for.
var reservedPrefixes = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved"},           // "this network"
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"}, // carrier-grade NAT
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},        // IETF protocol assignments
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},       // benchmarking
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},         // reserved, and the broadcast address
	{netip.MustParsePrefix("::/96"), "reserved"},               // IPv4-compatible IPv6, deprecated
	{netip.MustParsePrefix("100::/64"), "reserved"},            // discard-only
	{netip.MustParsePrefix("2001:db8::/32"), "reserved"},       // documentation
}

// nat64 is the well-known NAT64 prefix and sixToFour the 6to4 one: their
// addresses reach an IPv4 address they carry, which is what is judged.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Kind says what kind of non-public address ip is ("loopback", "private",
// "link-local", "unspecified", "multicast", "shared (CGNAT)", "reserved"), or
// "" for a public one. An IPv6 address that carries an IPv4 one (mapped,
// NAT64, 6to4) is judged by the IPv4 address.
func Kind(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	switch {
	case nat64.Contains(ip):
		b := ip.As16()
		return Kind(netip.AddrFrom4([4]byte(b[12:])))
	case sixToFour.Contains(ip):
		b := ip.As16()
		return Kind(netip.AddrFrom4([4]byte(b[2:6])))
	}
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	}
	for _, r := range reservedPrefixes {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	return ""
}
