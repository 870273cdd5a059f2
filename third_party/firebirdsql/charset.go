/*
******************************************************************************
The MIT License (MIT)

# Copyright (c) 2026 Hajime Nakagami

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
******************************************************************************
*/
package firebirdsql

import (
	"database/sql/driver"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

func charsetEncoding(charset string) encoding.Encoding {
	switch charset {
	case "SJIS_0208":
		return japanese.ShiftJIS
	case "EUCJ_0208":
		return japanese.EUCJP
	case "ISO8859_1":
		return charmap.ISO8859_1
	case "ISO8859_2":
		return charmap.ISO8859_2
	case "ISO8859_3":
		return charmap.ISO8859_3
	case "ISO8859_4":
		return charmap.ISO8859_4
	case "ISO8859_5":
		return charmap.ISO8859_5
	case "ISO8859_6":
		return charmap.ISO8859_6
	case "ISO8859_7":
		return charmap.ISO8859_7
	case "ISO8859_8":
		return charmap.ISO8859_8
	case "ISO8859_9":
		return charmap.ISO8859_9
	case "ISO8859_13":
		return charmap.ISO8859_13
	case "KSC_5601":
		return korean.EUCKR
	case "WIN1250":
		return charmap.Windows1250
	case "WIN1251":
		return charmap.Windows1251
	case "WIN1252":
		return charmap.Windows1252
	case "WIN1253":
		return charmap.Windows1253
	case "WIN1254":
		return charmap.Windows1254
	case "BIG_5":
		return traditionalchinese.Big5
	case "GB_2312":
		return simplifiedchinese.HZGB2312
	case "WIN1255":
		return charmap.Windows1255
	case "WIN1256":
		return charmap.Windows1256
	case "WIN1257":
		return charmap.Windows1257
	case "KOI8R":
		return charmap.KOI8R
	case "KOI8U":
		return charmap.KOI8U
	case "WIN1258":
		return charmap.Windows1258
	default:
		return nil
	}
}

func decodeCharset(raw []byte, charset string) (string, bool) {
	enc := charsetEncoding(charset)
	if enc == nil {
		return "", false
	}
	v, _ := enc.NewDecoder().Bytes(raw)
	return string(v), true
}

func encodeCharset(str string, charset string) (string, bool) {
	enc := charsetEncoding(charset)
	if enc == nil {
		return "", false
	}
	v, _ := enc.NewEncoder().String(str)
	return v, true
}

// checkEncodable refuses a string argument the connection's character set
// cannot hold, before anything of its execute is sent: encodeCharset
// would send it as an empty string, a silent loss. The refusal is the one
// Firebird gives for a string the database's character set cannot hold.
func checkEncodable(args []driver.Value, charset string) error {
	enc := charsetEncoding(charset)
	if enc == nil {
		return nil
	}
	for _, a := range args {
		if s, ok := a.(string); ok {
			if _, err := enc.NewEncoder().String(s); err != nil {
				codes := []int{ISCArithExcept, ISCTransliterationFailed}
				return &FbError{
					GDSCodes: codes,
					SQLCode:  gdsToSQLCode(codes[0]),
					SQLState: gdsToSQLState(codes[0]),
					Params:   [][]string{nil, nil},
					Message:  errmsgs(codes[0]) + errmsgs(codes[1]),
				}
			}
		}
	}
	return nil
}
