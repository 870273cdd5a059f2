/*******************************************************************************
The MIT License (MIT)

Copyright (c) 2013-2019 Hajime Nakagami

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
the Software, and to permit persons to whom the Software is furnished to do so,
subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*******************************************************************************/

package firebirdsql

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// splitList parses a comma-separated DSN list value (e.g. auth_plugin_list or
// wire_crypt_plugin) into an ordered slice, trimming surrounding whitespace and
// dropping empty fields. Order is preserved to express client preference.
func splitList(s string) []string {
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func str_to_bytes(s string) []byte {
	return []byte(s)
}

func int32_to_bytes(i32 int32) []byte {
	bs := []byte{
		byte(i32 & 0xFF),
		byte(i32 >> 8 & 0xFF),
		byte(i32 >> 16 & 0xFF),
		byte(i32 >> 24 & 0xFF),
	}
	return bs
}

func int64_to_bytes(i64 int64) []byte {
	bs := []byte{
		byte(i64 & 0xFF),
		byte(i64 >> 8 & 0xFF),
		byte(i64 >> 16 & 0xFF),
		byte(i64 >> 24 & 0xFF),
		byte(i64 >> 32 & 0xFF),
		byte(i64 >> 40 & 0xFF),
		byte(i64 >> 48 & 0xFF),
		byte(i64 >> 56 & 0xFF),
	}
	return bs
}

func bint64_to_bytes(i64 int64) []byte {
	bs := []byte{
		byte(i64 >> 56 & 0xFF),
		byte(i64 >> 48 & 0xFF),
		byte(i64 >> 40 & 0xFF),
		byte(i64 >> 32 & 0xFF),
		byte(i64 >> 24 & 0xFF),
		byte(i64 >> 16 & 0xFF),
		byte(i64 >> 8 & 0xFF),
		byte(i64 & 0xFF),
	}
	return bs
}

func bint32_to_bytes(i32 int32) []byte {
	bs := []byte{
		byte(i32 >> 24 & 0xFF),
		byte(i32 >> 16 & 0xFF),
		byte(i32 >> 8 & 0xFF),
		byte(i32 & 0xFF),
	}
	return bs
}

func int16_to_bytes(i16 int16) []byte {
	bs := []byte{
		byte(i16 & 0xFF),
		byte(i16 >> 8 & 0xFF),
	}
	return bs
}
func bytes_to_str(b []byte) string {
	return string(b)
}

func bytes_to_bint32(b []byte) int32 {
	return int32(binary.BigEndian.Uint32(b))
}

func bytes_to_int32(b []byte) int32 {
	return int32(binary.LittleEndian.Uint32(b))
}

func bytes_to_bint16(b []byte) int16 {
	return int16(binary.BigEndian.Uint16(b))
}

func bytes_to_buint16(b []byte) uint16 {
	return uint16(binary.BigEndian.Uint16(b))
}

func bytes_to_int16(b []byte) int16 {
	return int16(binary.LittleEndian.Uint16(b))
}

func bytes_to_uint16(b []byte) uint16 {
	return binary.LittleEndian.Uint16(b)
}

func bytes_to_bint64(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b))
}

func bytes_to_int64(b []byte) int64 {
	return int64(binary.LittleEndian.Uint64(b))
}

func bigIntFromHexString(s string) *big.Int {
	ret := new(big.Int)
	ret.SetString(s, 16)
	return ret
}

func bigIntFromString(s string) *big.Int {
	ret := new(big.Int)
	ret.SetString(s, 10)
	return ret
}

func xdrBytes(bs []byte) []byte {
	// XDR encoding bytes
	n := len(bs)
	padding := 0
	if n%4 != 0 {
		padding = 4 - n%4
	}
	buf := make([]byte, 4+n+padding)
	buf[0] = byte(n >> 24 & 0xFF)
	buf[1] = byte(n >> 16 & 0xFF)
	buf[2] = byte(n >> 8 & 0xFF)
	buf[3] = byte(n & 0xFF)
	for i, b := range bs {
		buf[4+i] = b
	}
	return buf
}

func xdrString(s string) []byte {
	// XDR encoding string
	bs := []byte(s)
	return xdrBytes(bs)
}

func _int64ToBlr(i64 int64) ([]byte, []byte) {
	v := bint64_to_bytes(i64)
	blr := []byte{16, 0}

	return blr, v
}

func _int32ToBlr(i32 int32) ([]byte, []byte) {
	v := bint32_to_bytes(i32)
	blr := []byte{8, 0}

	return blr, v
}

func _float64ToBlr(v float64) ([]byte, []byte) {
	buf := new(bytes.Buffer)
	binary.Write(buf, binary.BigEndian, v)
	blr := []byte{27}
	return blr, buf.Bytes()
}

func _bytesToBlr(v []byte) ([]byte, []byte) {
	nbytes := len(v)
	pad_length := ((4 - nbytes) & 3)
	padding := make([]byte, pad_length)
	v = bytes.Join([][]byte{
		v,
		padding,
	}, nil)
	blr := []byte{14, byte(nbytes & 255), byte(nbytes >> 8)}
	return blr, v
}

func _convert_date(t time.Time) []byte {
	i := int(t.Month()) + 9
	jy := t.Year() + (i / 12) - 1
	jm := i % 12
	c := jy / 100
	jy -= 100 * c
	j := (146097*c)/4 + (1461*jy)/4 + (153*jm+2)/5 + t.Day() - 678882
	return bint32_to_bytes(int32(j))
}

func _convert_time(t time.Time) []byte {
	v := (t.Hour()*3600+t.Minute()*60+t.Second())*10000 + t.Nanosecond()/100000
	return bint32_to_bytes(int32(v))
}

func _convert_timestamp(t time.Time) []byte {
	return bytes.Join([][]byte{
		_convert_date(t),
		_convert_time(t),
	}, nil)
}

// _timezoneToBytes encodes the trailing 4 bytes of a WITH TIME ZONE wire
// value: an empty GMT displacement (the server derives it from the zone)
// followed by the 2-byte Firebird timezone id.
func _timezoneToBytes(tzID int32) []byte {
	return []byte{0, 0, byte(int32(tzID) >> 8), byte(tzID)}
}

// _convert_time_tz encodes a date-less TIME WITH TIME ZONE value. The wire
// payload is the UTC time-of-day ticks and the zone id. The ticks come from
// the wall clock in the zone that the id names. The label then always agrees
// with the ticks. This includes the case in which the session timezone is
// different from the zone of the value. The offset of the label zone is its
// offset on timeTzBaseDate. The server uses 2020-01-01 as the base date for
// a date-less time. Go time.Date with year 0 would apply the historical LMT
// offset instead.
func _convert_time_tz(t time.Time, tzID int32) []byte {
	labelLoc := time.UTC
	if labelName := getTimezoneNameByID(int(tzID)); labelName != "" {
		if labelName == t.Location().String() {
			labelLoc = t.Location()
		} else if l, err := time.LoadLocation(labelName); err == nil {
			labelLoc = l
		}
	}
	src := t
	if t.Year() == 0 {
		// Input without a date (time.Parse gives year 0): put the value on
		// the base date first. src.In() would otherwise apply the LMT offset
		// of the location.
		src = time.Date(timeTzBaseDate.Year(), timeTzBaseDate.Month(), timeTzBaseDate.Day(),
			t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	}
	w := src.In(labelLoc)
	adjusted := time.Date(timeTzBaseDate.Year(), timeTzBaseDate.Month(), timeTzBaseDate.Day(),
		w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), labelLoc)
	return bytes.Join([][]byte{
		_convert_time(adjusted.UTC()),
		_timezoneToBytes(tzID),
	}, nil)
}

func _convert_timestamp_tz(t time.Time, tzID int32) []byte {
	return bytes.Join([][]byte{
		_convert_timestamp(t.UTC()),
		_timezoneToBytes(tzID),
	}, nil)
}

func _dateToBlr(t time.Time) ([]byte, []byte) {
	v := _convert_date(t)
	blr := []byte{12}
	return blr, v
}

func _timeToBlrNoTZ(t time.Time) ([]byte, []byte) {
	return []byte{13}, _convert_time(t)
}

func _timestampToBlrNoTZ(t time.Time) ([]byte, []byte) {
	return []byte{35}, _convert_timestamp(t)
}

func _timeToBlr(t time.Time, protocolVersion int32, sessionTimezone string) ([]byte, []byte) {
	if protocolVersion >= PROTOCOL_VERSION16 {
		tzID := resolveTimezoneFor(t, sessionTimezone)
		return []byte{28}, _convert_time_tz(t, tzID)
	}
	return _timeToBlrNoTZ(t)
}

func _timestampToBlr(t time.Time, protocolVersion int32, sessionTimezone string) ([]byte, []byte) {
	if protocolVersion >= PROTOCOL_VERSION16 {
		tzID := resolveTimezoneFor(t, sessionTimezone)
		return []byte{29}, _convert_timestamp_tz(t, tzID)
	}
	return _timestampToBlrNoTZ(t)
}

func convertToBool(s string, defaultValue bool) bool {
	v, err := strconv.ParseBool(s)
	if err != nil {
		v = defaultValue
	}
	return v
}

func parseOptionInt(s string, defaultValue int) int {
	if s == "" {
		return defaultValue
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return defaultValue
	}
	return v
}

func fitsUint32(val int64) bool {
	return val >= 0 && val <= 0xffffffff
}
