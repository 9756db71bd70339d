package protocol_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/pkg/protocol"
)

func TestVersions(t *testing.T) {
	tests := []struct {
		v         string
		supported bool
		legacy    bool
		modern    bool
		negotiate string
	}{
		{"2026-07-28", true, false, true, "2025-11-25"},
		{"2025-11-25", true, true, false, "2025-11-25"},
		{"2025-06-18", true, true, false, "2025-06-18"},
		{"2025-03-26", true, true, false, "2025-03-26"},
		{"2024-11-05", true, true, false, "2024-11-05"},
		{"2024-10-07", false, false, false, "2025-11-25"},
		{"2099-01-01", false, false, false, "2025-11-25"},
		{"draft", false, false, false, "2025-11-25"},
		{"2025-11-25 ", false, false, false, "2025-11-25"},
		{"", false, false, false, "2025-11-25"},
	}
	for _, tc := range tests {
		t.Run("v="+tc.v, func(t *testing.T) {
			if got := protocol.IsSupported(tc.v); got != tc.supported {
				t.Errorf("IsSupported = %v, want %v", got, tc.supported)
			}
			if got := protocol.IsLegacyVersion(tc.v); got != tc.legacy {
				t.Errorf("IsLegacyVersion = %v, want %v", got, tc.legacy)
			}
			if got := protocol.IsModernVersion(tc.v); got != tc.modern {
				t.Errorf("IsModernVersion = %v, want %v", got, tc.modern)
			}
			if got := protocol.NegotiateLegacy(tc.v); got != tc.negotiate {
				t.Errorf("NegotiateLegacy = %q, want %q", got, tc.negotiate)
			}
		})
	}
}

func TestVersionLists(t *testing.T) {
	versions := protocol.SupportedVersions()
	if versions[0] != protocol.LatestVersion {
		t.Errorf("SupportedVersions()[0] = %s, want the latest %s", versions[0], protocol.LatestVersion)
	}
	for i := 1; i < len(versions); i++ {
		if versions[i-1] <= versions[i] {
			t.Errorf("SupportedVersions() not newest first at %d: %v", i, versions)
		}
	}
	for _, v := range versions {
		if protocol.IsLegacyVersion(v) == protocol.IsModernVersion(v) {
			t.Errorf("%s: legacy=%v modern=%v, want exactly one era", v, protocol.IsLegacyVersion(v), protocol.IsModernVersion(v))
		}
	}
	if !protocol.IsLegacyVersion(protocol.LatestLegacyVersion) {
		t.Errorf("LatestLegacyVersion %s is not a legacy version", protocol.LatestLegacyVersion)
	}
}

func TestEraString(t *testing.T) {
	tests := []struct {
		era  protocol.Era
		want string
	}{
		{protocol.EraLegacy, "legacy"},
		{protocol.EraModern, "modern"},
		{protocol.Era(0), "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.era.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

var allLevels = []protocol.LoggingLevel{
	protocol.LevelDebug, protocol.LevelInfo, protocol.LevelNotice, protocol.LevelWarning,
	protocol.LevelError, protocol.LevelCritical, protocol.LevelAlert, protocol.LevelEmergency,
}

func TestLoggingLevelValid(t *testing.T) {
	tests := []struct {
		level protocol.LoggingLevel
		want  bool
	}{
		{"debug", true}, {"info", true}, {"notice", true}, {"warning", true},
		{"error", true}, {"critical", true}, {"alert", true}, {"emergency", true},
		{"", false}, {"warn", false}, {"DEBUG", false}, {"trace", false}, {"fatal", false},
	}
	for _, tc := range tests {
		t.Run("level="+string(tc.level), func(t *testing.T) {
			if got := tc.level.Valid(); got != tc.want {
				t.Errorf("Valid() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoggingLevelEnabled(t *testing.T) {
	tests := []struct {
		name      string
		threshold protocol.LoggingLevel
		msg       protocol.LoggingLevel
		want      bool
	}{
		{"debug passes debug", protocol.LevelDebug, protocol.LevelDebug, true},
		{"debug passes emergency", protocol.LevelDebug, protocol.LevelEmergency, true},
		{"warning passes error", protocol.LevelWarning, protocol.LevelError, true},
		{"warning passes warning", protocol.LevelWarning, protocol.LevelWarning, true},
		{"warning blocks notice", protocol.LevelWarning, protocol.LevelNotice, false},
		{"emergency blocks alert", protocol.LevelEmergency, protocol.LevelAlert, false},
		{"empty threshold blocks emergency", "", protocol.LevelEmergency, false},
		{"empty threshold blocks debug", "", protocol.LevelDebug, false},
		{"unknown threshold blocks everything", "verbose", protocol.LevelEmergency, false},
		{"unknown message level is blocked", protocol.LevelDebug, "verbose", false},
		{"empty message level is blocked", protocol.LevelDebug, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.threshold.Enabled(tc.msg); got != tc.want {
				t.Errorf("%q.Enabled(%q) = %v, want %v", tc.threshold, tc.msg, got, tc.want)
			}
		})
	}
	// Every pair: a message passes exactly when it is at least as severe.
	for i, threshold := range allLevels {
		for j, msg := range allLevels {
			if got, want := threshold.Enabled(msg), j >= i; got != want {
				t.Errorf("%s.Enabled(%s) = %v, want %v", threshold, msg, got, want)
			}
		}
	}
}
