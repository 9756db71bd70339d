package protocol

import "slices"

// Protocol versions this package knows.
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"

	// LatestLegacyVersion is offered to an initialize that asks for a version
	// we do not speak.
	LatestLegacyVersion = Version20251125
	// LatestVersion is the newest version served.
	LatestVersion = Version20260728
)

// supportedVersions lists every version served, newest first.
var supportedVersions = []string{Version20260728, Version20251125, Version20250618, Version20250326, Version20241105}

// SupportedVersions returns every version served, newest first (a new
// slice: the caller may keep or change it).
func SupportedVersions() []string { return slices.Clone(supportedVersions) }

// legacyVersions are the versions that use the initialize handshake.
var legacyVersions = []string{Version20251125, Version20250618, Version20250326, Version20241105}

// modernVersions lists the supported modern (stateless) versions.
var modernVersions = []string{Version20260728}

// ModernVersions returns the supported modern (stateless) versions, newest
// first (a new slice).
func ModernVersions() []string { return slices.Clone(modernVersions) }

// LegacyVersions returns the versions a session (initialize) may
// negotiate, newest first (a copy).
func LegacyVersions() []string { return slices.Clone(legacyVersions) }

// IsSupported reports whether v is a version this server speaks.
func IsSupported(v string) bool { return slices.Contains(supportedVersions, v) }

// IsLegacyVersion reports whether v is a supported handshake-era version.
func IsLegacyVersion(v string) bool { return slices.Contains(legacyVersions, v) }

// IsModernVersion reports whether v is a supported stateless-era version.
func IsModernVersion(v string) bool { return slices.Contains(modernVersions, v) }

// NegotiateLegacy returns the version to answer an initialize that requested
// v: v itself when it is a supported legacy version, otherwise the latest
// legacy version.
func NegotiateLegacy(requested string) string {
	if IsLegacyVersion(requested) {
		return requested
	}
	return LatestLegacyVersion
}

// Era is the protocol era a request is served under.
type Era uint8

// The eras.
const (
	EraLegacy Era = iota + 1 // initialize handshake, sessions (<= 2025-11-25)
	EraModern                // stateless, per-request _meta (>= 2026-07-28)
)

func (e Era) String() string {
	switch e {
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	}
	return "unknown"
}
