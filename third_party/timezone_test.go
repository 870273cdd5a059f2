package thirdparty

import (
	"context"
	"testing"
	"time"

	"github.com/erp-gateway/gateway/shared/fbtest"
)

// TestDigitsInADaylightSavingGap holds patch 0015 against Firebird: a DATE
// or TIMESTAMP whose digits name no instant of the session's zone (its
// clocks jumped past them) reads with the database's digits, where the
// driver as released moved it an hour, a midnight to the day before; any
// other value reads as before, in the session's zone.
func TestDigitsInADaylightSavingGap(t *testing.T) {
	for _, c := range []struct {
		zone, sql, want string
		gap             bool
	}{
		{"America/Sao_Paulo", "CAST('2018-11-04' AS DATE)", "2018-11-04 00:00:00", true},
		{"America/Sao_Paulo", "CAST('2018-11-04 00:30:00' AS TIMESTAMP)", "2018-11-04 00:30:00", true},
		{"America/Bogota", "CAST('1992-05-03' AS DATE)", "1992-05-03 00:00:00", true},
		{"America/New_York", "CAST('2026-03-08 02:30:00.1234' AS TIMESTAMP)", "2026-03-08 02:30:00.1234", true},
		{"America/New_York", "CAST('2026-03-08 03:30:00' AS TIMESTAMP)", "2026-03-08 03:30:00", false},
		{"America/New_York", "CAST('2026-11-01 01:30:00' AS TIMESTAMP)", "2026-11-01 01:30:00", false},
		{"America/Sao_Paulo", "CAST('2018-11-05' AS DATE)", "2018-11-05 00:00:00", false},
		// Amsterdam's clocks moved 28 seconds at midnight on 1 July 1937.
		{"Europe/Amsterdam", "CAST('1937-07-01' AS DATE)", "1937-07-01 00:00:00", true},
	} {
		t.Run(c.zone+" "+c.want, func(t *testing.T) {
			cfg := fbtest.Demo(t)
			cfg.Timezone = c.zone
			db, _ := countedDBOf(t, cfg, "")
			var got time.Time
			if err := db.QueryRowContext(context.Background(), "SELECT "+c.sql+" FROM RDB$DATABASE").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if s := got.Format("2006-01-02 15:04:05.9999"); s != c.want {
				t.Fatalf("%s read %s, want %s", c.sql, s, c.want)
			}
			// Outside a gap the value is the zone's, as released.
			if loc := got.Location().String(); !c.gap && loc != c.zone {
				t.Fatalf("%s read in %s, want %s", c.sql, loc, c.zone)
			}
		})
	}
}
