// localeval view: the list of runs reloads itself when the runs folder changes (a run started, finished or
// was removed); while two runs are being picked for a comparison it only says so. Allowed by its hash.
(function () {
  "use strict";
  var shown = document.body.getAttribute("data-version");
  var notice = document.getElementById("changed");
  function check() {
    fetch("/api/version", {cache: "no-store"}).then(function (response) {
      return response.ok ? response.text() : shown;
    }).then(function (version) {
      if (version === shown) { return; }
      if (document.querySelector("form.pick input:checked")) { notice.hidden = false; return; }
      location.reload();
    }, function () { /* the viewer stopped: the page stays as it is */ });
  }
  setInterval(check, 3000);
}());
